// The approval card's sentences for DeFi requests the signer decoded (docs/defi.md): a swap, a wrap or
// unwrap, a claim. "Swap 0.011 ETH ≈ $33 for at least 29.5 TUSD ≈ $29 on Uniswap v3 (anvil)", the
// slippage bound the signer holds it to, and who gets the output; the router call and the ETH paid to
// the router or WETH that the sentence already says are not repeated as "Call a contract".
import { el, text, visible } from './dom.js';
import * as P from './present.js';
import { amountText, roundUnits } from './home.js';

export const DEFI = new Set(['swap', 'wrap', 'unwrap', 'claim', 'payout']);
const lower = (a) => text(a).toLowerCase();

// "uniswap-v3" (the policy's name for the router) -> "Uniswap v3".
export function venueName(name) {
  const t = visible(name).trim();
  if (!/^[a-z0-9][a-z0-9-]*$/.test(t)) return t;
  const words = t.split('-');
  return [words[0].charAt(0).toUpperCase() + words[0].slice(1), ...words.slice(1)].join(' ');
}

// Accounts the owner knows as theirs: the main account, and (from the home reading) session keys.
function ownerLabel(address, ctx) {
  const a = lower(address);
  if (a && a === lower(ctx.mainAddress)) return 'your main account';
  const known = ctx.ownAccounts && ctx.ownAccounts.get(a);
  return known || null;
}

function party(p, ctx) {
  const who = p && typeof p === 'object' ? p : {};
  const mine = ownerLabel(who.address, ctx);
  return el('span', { class: 'party' },
    mine ? el('span', { class: 'name' }, mine) : who.name ? el('span', { class: 'name' }, visible(who.name))
      : el('span', { class: 'new-address' }, 'NEW ADDRESS'),
    ' ', el('span', { class: 'short-address' }, P.shortAddress(who.address)));
}

// The actions a DeFi sentence already says: the router / WETH / distributor calls, ETH paid to them.
export function explained(actions) {
  const places = new Set();
  for (const a of actions) {
    if (!a || typeof a !== 'object') continue;
    if (a.type === 'swap' || a.type === 'payout') places.add(lower(a.router && a.router.address));
    if (a.type === 'wrap' || a.type === 'unwrap') places.add(lower(a.contract && a.contract.address));
    if (a.type === 'claim') places.add(lower(a.distributor && a.distributor.address));
  }
  places.delete('');
  const hidden = new Set();
  if (!places.size) return hidden;
  const swaps = actions.some((a) => a && a.type === 'swap');
  for (const a of actions) {
    if (!a || typeof a !== 'object') continue;
    if (a.type === 'call' && a.decoded && places.has(lower(a.target && a.target.address))) hidden.add(a);
    if (a.type === 'transfer' && a.token === 'native' && places.has(lower(a.recipient && a.recipient.address))) hidden.add(a);
    if (a.type === 'payout' && swaps) hidden.add(a);  // said by the swap: "for at least N ETH"
  }
  return hidden;
}

function slippageLine(a) {
  const bps = Number(text(a.max_slippage_bps));
  const bound = Number.isFinite(bps) && text(a.max_slippage_bps) !== '' ? ` (your policy allows at most ${bps / 100}% slippage)` : '';
  return el('p', { class: 'slippage' }, `If the price moves, the swap fails rather than pay out less${bound}.`);
}

// One or two paragraphs for a DeFi action (null for an action this module does not word).
export function sentence(a, r, ctx) {
  const on = ` on ${visible(P.chainName(r))}`;
  if (a.type === 'swap') {
    const venue = a.venue ? venueName(a.venue) : null;
    const recipient = a.recipient && lower(a.recipient.address) !== lower(a.router && a.router.address) ? a.recipient : null;
    const where = venue ? ` on ${venue} (${visible(P.chainName(r))})` : null;
    return [
      el('p', { class: 'sentence swap' }, `Swap ${amountText(a.pays || a.token_in, 'up')} for at least ${amountText(a.gets_at_least || a.token_out_min)}`,
        where || [' through an unlisted router ', party(a.router, ctx), on],
        recipient ? [', paid to ', party(recipient, ctx)] : ''),
      slippageLine(a),
    ];
  }
  if (a.type === 'wrap' || a.type === 'unwrap') {
    const verb = a.type === 'wrap' ? 'Wrap' : 'Unwrap';
    const into = a.becomes && a.becomes.amount ? ` into ${visible(a.becomes.amount)}` : '';
    // the contract is the policy's listed token (its symbol names it), else it is shown as new
    const symbol = a.type === 'wrap' ? a.becomes && a.becomes.symbol : a.symbol;
    const contract = { ...(a.contract || {}), name: (a.contract && a.contract.name) || (symbol ? `the ${visible(symbol)} contract` : null) };
    return [el('p', { class: `sentence ${a.type}` }, `${verb} ${amountText(a, 'up')}${into} at `, party(contract, ctx), on)];
  }
  if (a.type === 'claim') {
    return [el('p', { class: 'sentence claim' }, `Claim ${a.amount ? amountText(a) : `${visible(a.amount_base_units)} base units of a token this signer does not know`} from `,
      party(a.distributor, ctx), ' for ', party(a.account, ctx), on)];
  }
  if (a.type === 'payout') {
    return [el('p', { class: 'sentence payout' }, 'The router pays out what it holds to ', a.recipient ? party(a.recipient, ctx) : 'the caller', on)];
  }
  return null;
}

// Short words for the activity list.
export function summary(a) {
  if (a.type === 'swap') return { what: `Swap ${amountText(a.pays || a.token_in, 'up')} for ${amountText(a.gets_at_least || a.token_out_min)}`, to: a.venue ? venueName(a.venue) : P.shortAddress(a.router && a.router.address) };
  if (a.type === 'wrap' || a.type === 'unwrap') return { what: `${a.type === 'wrap' ? 'Wrap' : 'Unwrap'} ${visible(a.amount || 'a token')}`, to: '' };
  if (a.type === 'claim') return { what: `Claim ${visible(a.amount || 'a token')}`, to: '' };
  return null;
}

// What the node says changes for the owner's other accounts and for whoever a swap or claim pays
// (a session key receiving a swap's output); the pool's and the router's own moves are left out.
export function otherChanges(r, ctx) {
  const simulation = r.simulation;
  if (!simulation || !Array.isArray(simulation.changes)) return [];
  const paid = new Set();
  for (const a of Array.isArray(r.actions) ? r.actions : []) {
    if (a && a.type === 'swap' && a.recipient) paid.add(lower(a.recipient.address));
    if (a && a.type === 'claim' && a.account) paid.add(lower(a.account.address));
  }
  const rows = [];
  for (const c of simulation.changes) {
    if (!c || typeof c !== 'object' || lower(c.account) === lower(ctx.mainAddress)) continue;
    if (!ownerLabel(c.account, ctx) && !paid.has(lower(c.account))) continue;
    const delta = P.bigOf(c.delta), decimals = Number(text(c.decimals));
    if (delta === null || !Number.isInteger(decimals) || decimals < 0 || decimals > 36) continue;
    const symbol = text(c.symbol) || (c.asset === 'native' ? 'ETH' : P.shortAddress(c.asset));
    const who = ownerLabel(c.account, ctx) || P.shortAddress(c.account);
    const shown = roundUnits(delta < 0n ? -delta : delta, decimals, delta < 0n ? 'up' : 'down');
    rows.push({ delta, text: `${delta < 0n ? '−' : '+'}${shown} ${symbol} (${who})` });
  }
  return rows;
}
