// The approval card, in the order a wallet user reads it on the first screen: one sentence, what
// the node says changes in the owner's balances, the total network fee, the rules that escalated
// in words, the agent's reason marked unverified; the exact transaction, rule ids and passed checks
// under "Details"; Approve / Deny / Deny and freeze in a bar that stays visible.
import { el, text, visible } from './dom.js';
import * as P from './present.js';
import * as defi from './swapcard.js';

// The party of an action: its address-book name, or a loud NEW ADDRESS.
function party(p) {
  const who = p && typeof p === 'object' ? p : {};
  return el('span', { class: 'party' },
    who.name ? el('span', { class: 'name' }, visible(who.name)) : el('span', { class: 'new-address' }, 'NEW ADDRESS'),
    ' ', el('span', { class: 'short-address' }, P.shortAddress(who.address)));
}

function amountOf(a) {
  if (a.amount !== null && a.amount !== undefined) return visible(a.amount);
  return `an amount of a token this signer does not know (${P.shortAddress(a.token)}; see Details)`;
}

// The priced part of an action: " ≈ $61" when the signed request carries a price, else nothing.
function priced(a) {
  const base = P.bigOf(a.amount_base_units);
  const decimals = Number(text(a.decimals !== undefined ? a.decimals : a.token === 'native' ? 18 : NaN));
  if (base === null || !Number.isInteger(decimals)) return '';
  const usd = P.dollars(base, decimals, a.price_usd);
  return usd ? ` ≈ ${usd}` : '';
}

// One sentence per action: "Send 0.02 ETH ≈ $61 to NEW ADDRESS 0x3C44…93BC on Base".
export function sentences(r, ctx = {}) {
  const on = ` on ${visible(P.chainName(r))}`;
  const out = [];
  const actions = Array.isArray(r.actions) ? r.actions : [];
  const said = defi.explained(actions);  // a swap's router call and ETH payment: said by the swap
  for (const a of actions) {
    if (!a || typeof a !== 'object' || said.has(a)) continue;
    if (defi.DEFI.has(a.type)) {
      out.push(...(defi.sentence(a, r, ctx) || []));
    } else if (a.type === 'transfer') {
      out.push(el('p', { class: 'sentence' }, `Send ${amountOf(a)}${priced(a)} to `, party(a.recipient), on));
    } else if (a.type === 'approval') {
      out.push(el('p', { class: 'sentence' }, a.unlimited ? 'Allow ' : 'Allow ', party(a.spender),
        a.unlimited ? el('span', {}, ' to spend ', el('strong', { class: 'warn' }, 'ALL'), ` your ${visible(a.symbol || 'tokens')}`)
          : ` to spend up to ${amountOf(a)}${priced(a)}`, on));
    } else if (a.type === 'call') {
      const value = P.bigOf(a.value);
      out.push(el('p', { class: 'sentence' }, 'Call a contract at ', party(a.target),
        value ? ` sending ${P.formatUnits(value, 18)} ${P.nativeSymbol(r)}` : '', on));
    } else if (a.type === 'forbidden') {
      out.push(el('p', { class: 'sentence warn' }, `Forbidden: ${visible(P.checksumIn(a.reason))}`));
    }
  }
  return out;
}

// Short words for the activity list: what, and to whom.
export function summary(r) {
  const actions = Array.isArray(r.actions) ? r.actions : [];
  for (const a of actions) {
    const said = a && typeof a === 'object' && defi.DEFI.has(a.type) ? defi.summary(a) : null;
    if (said) return said;
  }
  const hidden = defi.explained(actions);
  for (const a of actions) {
    if (!a || typeof a !== 'object' || hidden.has(a)) continue;
    const who = (p) => (p && p.name ? visible(p.name) : P.shortAddress(p && p.address));
    if (a.type === 'transfer') return { what: `Send ${a.amount ? visible(a.amount) : 'a token'}`, to: who(a.recipient) };
    if (a.type === 'approval') return { what: a.unlimited ? 'Unlimited approval' : `Approve ${a.amount ? visible(a.amount) : 'a token'}`, to: who(a.spender) };
    if (a.type === 'call') return { what: 'Contract call', to: who(a.target) };
  }
  if (r.kind === 'policy') return { what: 'Policy change', to: '' };
  return { what: visible(r.summary).slice(0, 60) || 'Request', to: '' };
}

function changesSection(r, ctx) {
  const changes = P.balanceChanges(r.simulation, ctx.mainAddress);
  if (!changes) return null;  // no simulation in the request: nothing is claimed
  const rows = [...changes.rows, ...defi.otherChanges(r, ctx)];
  return el('section', { class: 'changes', 'aria-label': 'Balance changes, what the node says' },
    el('h3', {}, 'Your balances change ', el('span', { class: 'source' }, '(what the node says)')),
    rows.length
      ? el('ul', { class: 'change-rows' }, rows.map((c) => el('li', { class: c.delta < 0n ? 'out' : 'in' }, c.text)))
      : el('p', { class: 'note' }, 'No change to your balances.'));
}

function feeLine(r) {
  const wei = P.feeWei(r.tx);
  if (wei === null) return null;
  const usd = P.dollars(wei, 18, P.nativePrice(r));
  return el('p', { class: 'fee' }, el('span', { class: 'label' }, 'Network fee'), ' up to ',
    el('strong', {}, P.feeText(wei, P.nativeSymbol(r))), usd ? ` ≈ ${usd}` : '');
}

// A loosening: the diff is the reason (the policy hashes are under Details).
function policyHead(r) {
  return [el('p', { class: 'sentence' }, 'Loosen your signer\'s policy'),
    el('p', { class: 'note' }, 'What widens (the signer would sign more on its own):'),
    el('ul', { class: 'diff' }, (Array.isArray(r.policy.widens) ? r.policy.widens : []).map((w) => el('li', {}, '+ ' + visible(w))))];
}

function row(label, value) {
  return el('div', { class: 'row' }, el('span', { class: 'label' }, label), el('span', { class: 'value' }, value));
}

function detailsFold(r, rules) {
  const tx = r.tx;
  const txRows = tx ? [
    row('chain', `${visible(P.chainName(r))} (id ${text(r.chain_id)})`),
    row('from', P.groupedAddress(tx.from)), row('to', P.groupedAddress(tx.to)),
    row('value', `${P.formatUnits(P.bigOf(tx.value) || 0n, 18)} ${P.nativeSymbol(r)} (${text(tx.value)} wei)`),
    row('data', `${visible(tx.data)} (${Math.max(0, (text(tx.data).length - 2) / 2)} bytes)`),
    row('nonce', text(tx.nonce)), row('gas limit', text(tx.gas_limit)),
    row('max fee', `${text(tx.max_fee_per_gas)} wei per gas`), row('priority fee', `${text(tx.max_priority_fee_per_gas)} wei per gas`),
  ] : r.kind === 'policy' && r.policy ? [
    row('from policy', visible(r.policy.from_hash)), row('to policy', visible(r.policy.to_hash)),
  ] : [el('p', { class: 'note' }, 'No transaction: this request can only be denied.')];
  const actionRows = (Array.isArray(r.actions) ? r.actions : []).filter((a) => a && a.amount_base_units !== undefined)
    .map((a) => row('token', `${a.token === 'native' ? 'native' : P.checksum(a.token)}: ${visible(a.amount_base_units)} base units`));
  return el('details', { class: 'more' }, el('summary', {}, 'Details'),
    el('h4', {}, 'Checks'),
    el('ul', { class: 'checks' }, rules.details.map((d) => el('li', {}, `${visible(d.rule_id)} (${visible(d.outcome)}): ${visible(d.reason)}`))),
    el('h4', {}, 'Exact transaction'), ...txRows, ...actionRows,
    el('p', { class: 'note' }, `request ${visible(r.request_id)}`));
}

// ctx: { mainAddress, journaled, canApprove, needsPassphrase, onAnswer(action, passphrase) }
export function renderCard(r, ctx) {
  const rules = P.escalatedRules(r.escalation);
  const pass = el('input', { type: 'password', class: 'approve-pass', id: `pass-${visible(r.request_id)}`, autocomplete: 'current-password' });
  const passField = ctx.needsPassphrase
    ? el('div', { class: 'field' }, el('label', { for: pass.id }, 'Key passphrase (to approve)'), pass) : null;
  const countdown = el('span', { class: 'countdown', 'data-expires': r.expires_at.value });
  const answer = (action) => ctx.onAnswer(action, pass.value);
  const j = ctx.journaled;
  return el('article', { class: 'card', 'data-request': r.request_id, 'aria-label': 'Approval request' },
    j ? el('p', { class: 'journaled' }, `You signed this already (tx ${visible(j.tx_hash).slice(0, 10)}…, nonce ${j.nonce}); `
      + 'approving again sends that same signed transaction, never a second payment.') : null,
    ...(r.kind === 'policy' && r.policy ? policyHead(r) : sentences(r, ctx)),
    changesSection(r, ctx),
    feeLine(r),
    el('h3', {}, 'Why it needs you'),
    el('ul', { class: 'reasons' }, (r.kind === 'policy' ? [P.shortIn(r.escalation && r.escalation.reason)] : rules.words)
      .map((w) => el('li', {}, visible(w)))),
    r.agent_reason_unverified ? el('p', { class: 'agent-reason' }, el('strong', {}, 'The agent says (unverified): '),
      visible(r.agent_reason_unverified).slice(0, 500)) : null,
    el('p', { class: 'expires' }, 'Expires in ', countdown),
    detailsFold(r, rules),
    el('div', { class: 'actionbar' },
      passField,
      el('p', { class: 'card-error', role: 'alert', hidden: true }),
      el('div', { class: 'buttons' },
        el('button', { class: 'approve primary', disabled: !ctx.canApprove, onclick: () => answer('approve') }, 'Approve'),
        el('button', { class: 'deny', onclick: () => answer('deny') }, 'Deny'),
        el('button', { class: 'deny-freeze danger', onclick: () => answer('freeze') }, 'Deny and freeze'))));
}

// Where the owner is looking: the message goes into the card's own action bar.
export function showCardError(card, message) {
  const box = card && card.querySelector('.card-error');
  if (!box) return false;
  box.textContent = message;
  box.hidden = !message;
  return true;
}
