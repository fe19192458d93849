// The home screen's money at a glance: the main account's balances, each session key against its cap,
// what Tier 3 still allows this period, and what the agent spent in each of the policy's windows.
// The signer reads them (`approvals.home`, signer/tier1/home.py); the page only words them: units, dollars
// at the policy's price, names from the address book. Kept in IndexedDB so the app opens offline to
// the last reading, marked with its time.
import { el, text, visible } from './dom.js';
import * as P from './present.js';
import { dumps, parse } from './canon.js';
import * as proto from './protocol.js';

// The signer signs each reading with its identity key (signer/wire/messages.py HOME_VIEW_DOMAIN):
// the bridge carries the balances and the spending, and cannot change a digit of them unseen.
export const HOME_DOMAIN = 'owliabot-home-view-v1';
export const UNSIGNED_READING = 'A new reading of your balances is not signed by your signer (the bridge may be '
  + 'compromised): it is not shown. What you see is the last signed reading.';

// `base` in units, short enough to read at a glance: exact up to 6 decimals; else 4 decimals from 1
// unit up, 4 significant digits below it, rounded `down` (what you hold, the least you get) or `up`
// (what you pay), so the words never claim more in your favour than the bytes do.
export function roundUnits(base, decimals, direction = 'down') {
  const exact = P.formatUnits(base, decimals);
  const frac = exact.split('.')[1] || '';
  if (frac.length <= 6) return exact;
  const magnitude = base < 0n ? -base : base;
  const one = 10n ** BigInt(decimals);
  const leadingZeros = magnitude >= one ? 0 : frac.length - frac.replace(/^0+/, '').length;
  const places = Math.min(decimals, (magnitude >= one ? 4 : leadingZeros + 4));
  const step = 10n ** BigInt(decimals - places);
  let kept = (magnitude / step) * step;
  if (direction === 'up' && kept !== magnitude) kept += step;
  return P.formatUnits(base < 0n ? -kept : kept, decimals);
}

// An amount the signer sent ({symbol, amount, amount_base_units, decimals, price_usd}) in words.
export function amountText(a, direction = 'down') {
  if (!a || typeof a !== 'object') return 'an unknown amount';
  const base = P.bigOf(a.amount_base_units), decimals = Number(text(a.decimals));
  const listed = a.amount && a.symbol && base !== null && Number.isInteger(decimals) && decimals >= 0 && decimals <= 77;
  const units = listed ? `${roundUnits(base, decimals, direction)} ${visible(a.symbol)}`
    : a.amount ? visible(a.amount) : `${text(a.amount_base_units)} base units of an unlisted token`;
  const usd = base !== null && Number.isInteger(decimals) ? P.dollars(base, decimals, a.price_usd) : null;
  return usd ? `${units} ≈ ${usd}` : units;
}

// "24h" -> "today (the last 24 hours)"; the windows roll, so the words say so.
export function windowWords(seconds, label) {
  const s = Number(text(seconds));
  if (s === 86400) return 'today (the last 24 hours)';
  if (s === 7 * 86400) return 'this week (the last 7 days)';
  if (s === 3600) return 'this hour (the last 60 minutes)';
  if (s % 86400 === 0) return `in the last ${s / 86400} days`;
  if (s % 3600 === 0) return `in the last ${s / 3600} hours`;
  return `in the window ${visible(label)}`;
}

const who = (line) => (line.name ? visible(line.name) : P.shortAddress(line.address));
const tokenLine = (line) => line.asset && line.asset.token !== 'native';

function balanceRows(home) {
  const rows = [];
  for (const b of Array.isArray(home.balances) ? home.balances : []) {
    if (!b || typeof b !== 'object') continue;
    const on = ` on ${visible(b.chain)}`;
    if (b.error) {
      rows.push(el('li', { class: 'balance error' }, `${b.holder === 'main' ? 'Main account' : `Session key ${who(b)}`}${on}: ${visible(b.error)}`));
      continue;
    }
    // a listed token the main account does not hold is left out; ETH is always shown
    if (b.holder === 'main' && tokenLine(b) && P.bigOf(b.asset.amount_base_units) === 0n) continue;
    if (b.holder === 'main') {
      rows.push(el('li', { class: 'balance main', 'data-chain': text(b.chain_id) },
        el('span', { class: 'label' }, `Main account${b.name ? ` (${visible(b.name)})` : ''}${on}`), ' ',
        el('strong', {}, amountText(b.asset))));
    } else {
      rows.push(el('li', { class: 'balance session-key', 'data-key': visible(b.key_id) },
        el('span', { class: 'label' }, `Session key ${who(b)}${on}`), ' ',
        el('strong', {}, amountText(b.asset)), ` of its ${amountText(b.cap)} cap `,
        el('button', { class: 'topup-this', 'aria-label': `Top up session key ${P.shortAddress(b.address)}`, onclick: () => {
          const key = document.getElementById('topup-key'), amount = document.getElementById('topup-amount');
          if (key) key.value = text(b.key_id);
          if (amount) { amount.focus(); amount.scrollIntoView({ block: 'center' }); }
        } }, 'Top up')));
    }
  }
  return rows;
}

function tier3Rows(home) {
  const rows = [];
  for (const g of Array.isArray(home.tier3) ? home.tier3 : []) {
    if (!g || typeof g !== 'object') continue;
    if (g.error) { rows.push(el('li', { class: 'tier3-left error' }, `Tier 3: ${visible(g.error)}`)); continue; }
    if (g.ended_on_chain) {
      rows.push(el('li', { class: 'tier3-left ended' }, `Tier 3 on ${visible(g.chain)}: ended on chain (${visible(g.ended_on_chain)})`));
      continue;
    }
    for (const lane of Array.isArray(g.lanes) ? g.lanes : []) {
      if (!lane || typeof lane !== 'object') continue;
      const until = P.bigOf(lane.period_ends_at);
      const left = lane.error ? `could not read what is left: ${visible(lane.error)}`
        : lane.disabled ? 'disabled on chain'
          : lane.left_in_period ? `still allows ${amountText(lane.left_in_period)} this period`
            + (until !== null ? ` (until ${new Date(Number(until) * 1000).toLocaleString()})` : '')
            : lane.calls_left !== null && lane.calls_left !== undefined ? `${text(lane.calls_left)} calls left` : 'nothing left to read';
      rows.push(el('li', { class: 'tier3-left' }, el('span', { class: 'label' }, `Tier 3 on ${visible(g.chain)}: `), left,
        lane.words ? el('span', { class: 'note' }, ` (${visible(lane.words)})`) : null));
    }
  }
  return rows;
}

function spentRows(home) {
  const rows = [];
  for (const s of Array.isArray(home.spent) ? home.spent : []) {
    if (!s || typeof s !== 'object') continue;
    rows.push(el('li', { class: 'spent', 'data-window': visible(s.window) },
      el('span', { class: 'label' }, `Spent ${windowWords(s.seconds, s.window)}${s.chain ? ` on ${visible(s.chain)}` : ''}:`), ' ',
      el('strong', {}, amountText(s.spent)), ` of ${amountText(s.limit)}`));
  }
  for (const s of Array.isArray(home.spent_usd) ? home.spent_usd : []) {
    if (!s || typeof s !== 'object') continue;
    rows.push(el('li', { class: 'spent usd', 'data-window': visible(s.window) },
      el('span', { class: 'label' }, `Spent in dollars ${windowWords(s.seconds, s.window)}:`), ' ',
      el('strong', {}, `$${visible(s.spent_usd)}`), ` of $${visible(s.limit_usd)}`));
  }
  return rows;
}

// The section; `home` is the signer's last reading (or null), `live` whether it was read this session.
export function section(home, live, onRefresh, problem = null) {
  const alarm = problem ? el('p', { class: 'warn', id: 'home-problem', role: 'alert' }, problem) : null;
  if (!home) {
    return el('section', { id: 'home-money', 'aria-labelledby': 'home-money-title' }, el('h2', { id: 'home-money-title' }, 'Balances'),
      alarm, el('p', { class: 'note', id: 'balances-note' }, 'Balances show once this phone reaches your signer.'));
  }
  const at = Number(text(home.ts));
  const balances = [...balanceRows(home), ...tier3Rows(home)];
  const spent = spentRows(home);
  return el('section', { id: 'home-money', 'aria-labelledby': 'home-money-title' },
    el('h2', { id: 'home-money-title' }, 'Balances'),
    alarm,
    el('ul', { class: 'balances' }, balances.length ? balances : [el('li', {}, 'No account to show yet.')]),
    el('h3', {}, 'What the agent spent'),
    spent.length ? el('ul', { class: 'spent-list' }, spent) : el('p', { class: 'note' }, 'Your policy sets no spending window.'),
    el('p', { class: 'note', id: 'balances-note' }, `${live ? 'Read by your signer' : 'Last read by your signer'} at `
      + `${Number.isFinite(at) ? new Date(at * 1000).toLocaleString() : 'an unknown time'}; balances from the chain, spending from its ledger.`),
    onRefresh ? el('button', { id: 'refresh-home', onclick: onRefresh }, 'Read the balances again') : null);
}

// Ask the signer for a fresh reading; keep it for the offline app. Errors leave the last reading.
export async function refresh(app, store) {
  if (!app.session || app.status !== 'connected') return false;
  const home = await app.session.call('approvals.home');
  if (!home || typeof home !== 'object') return false;
  if (!proto.signedBy(app.device && app.device.signer_key, HOME_DOMAIN, proto.unsigned(home), home.signer_sig)) {
    app.homeProblem = UNSIGNED_READING;
    app.homeLive = false;
    return true;  // shown at once, over the last signed reading
  }
  app.home = home;
  app.homeLive = true;
  app.homeProblem = null;
  await store.put('kv', 'home', dumps(home, false));  // as text: the numbers stay exact
  return true;
}

export async function load(app, store) {
  const saved = await store.get('kv', 'home');
  try { app.home = typeof saved === 'string' ? parse(saved) : null; } catch { app.home = null; }
  app.homeLive = false;
}

// The owner's own accounts besides the main one (session keys), for the approval card's words.
export function ownAccounts(home) {
  const out = new Map();
  for (const b of (home && Array.isArray(home.balances) ? home.balances : [])) {
    if (b && b.holder === 'session_key' && b.address) out.set(text(b.address).toLowerCase(), 'your session key');
  }
  return out;
}

// After this phone ended Tier 3 on a chain (a revoke or a freeze), the last reading's Tier 3 lines
// there say so at once: an old "still allows" must not stand under "Tier 3 frozen" while offline.
export async function markTier3Ended(app, store, chainId, words) {
  if (!app.home || !Array.isArray(app.home.tier3)) return;
  for (const g of app.home.tier3) if (g && text(g.chain_id) === String(chainId)) g.ended_on_chain = words;
  await store.put('kv', 'home', dumps(app.home, false));
}

// A session key in words for the activity list: its short address when the last reading knows it.
// The session keys the signer listed in its last reading, for the top-up form: the owner picks one by
// its address and balance, never by its internal id.
export function topupKeys(home) {
  return (home && Array.isArray(home.balances) ? home.balances : [])
    .filter((b) => b && b.key_id && b.cap)
    .map((b) => ({ id: text(b.key_id), words: `${P.shortAddress(b.address)}: ${amountText(b.asset)} of its ${amountText(b.cap)} cap` }));
}

export function sessionKeyWords(home, keyId) {
  const line = (home && Array.isArray(home.balances) ? home.balances : []).find((b) => b && b.key_id && text(b.key_id) === keyId);
  return line ? `session key ${P.shortAddress(line.address)}` : 'a session key';
}
