// How the page words amounts, addresses, chains, fees and rules for the owner: units (never base
// units), dollars only where the signed request carries a price, names from the address book,
// EIP-55 addresses grouped so they can be compared at a glance. Pure functions, no DOM.
import { Num } from './canon.js';
import { toChecksum } from './eth.js';

const text = (v) => (v instanceof Num ? v.text : v === null || v === undefined ? '' : String(v));

// A whole number (a JSON integer or a decimal string) as a BigInt, or null.
export function bigOf(v) {
  const t = text(v);
  return /^-?\d+$/.test(t) ? BigInt(t) : null;
}

// `amount` base units with `decimals` as a decimal string, trailing zeros dropped (exact: BigInt).
export function formatUnits(amount, decimals) {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals), frac = decimals ? digits.slice(-decimals).replace(/0+$/, '') : '';
  return (negative ? '-' : '') + whole + (frac ? '.' + frac : '');
}

// "0.015" ETH typed by the owner -> wei; throws in words on anything else. The same rules as the
// signer's policies.units.parse_units (a differential property test holds them together).
export const MAX_DIGITS = 100;
export function parseUnits(typed, decimals = 18) {
  const t = typed.trim();
  if (t.length > MAX_DIGITS || !/^[0-9]+(\.[0-9]+)?$/.test(t)) throw new Error('type the amount in ETH, like 0.01');
  const [whole, rawFrac = ''] = t.split('.');
  const frac = rawFrac.replace(/0+$/, '');
  if (frac.length > decimals) throw new Error(`at most ${decimals} digits after the point`);
  return BigInt(whole + frac.padEnd(decimals, '0'));
}

// Dollars from a decimal price string (dollars per whole unit): "$61", "$0.42", "< $0.01", or null.
export function dollars(amount, decimals, priceUsd) {
  const p = text(priceUsd);
  if (!/^\d+(\.\d+)?$/.test(p) || amount === null) return null;
  const [pw, pf = ''] = p.split('.');
  const cents = (amount < 0n ? -amount : amount) * BigInt(pw + pf) * 100n / (10n ** BigInt(decimals + pf.length));
  if (cents === 0n && amount !== 0n) return '< $0.01';
  const whole = cents / 100n, rest = cents % 100n;
  const grouped = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return '$' + (whole >= 100n || rest === 0n ? grouped : `${grouped}.${rest.toString().padStart(2, '0')}`);
}

export function checksum(address) {
  try { return toChecksum(text(address)); } catch { return text(address); }
}

export const shortAddress = (address) => { const a = checksum(address); return /^0x[0-9a-fA-F]{40}$/.test(a) ? `${a.slice(0, 6)}…${a.slice(-4)}` : a; };

// "0x3C44 CdDd B6a9 00fa 2b58 5dd2 99e0 3d12 FA42 93BC": four characters a group, checksummed.
export function groupedAddress(address) {
  const a = checksum(address);
  return /^0x[0-9a-fA-F]{40}$/.test(a) ? '0x' + a.slice(2).match(/.{4}/g).join(' ') : a;
}

// Any raw address inside a sentence the signer wrote, checksummed (in full: for the Details fold).
export const checksumIn = (s) => text(s).replace(/0x[0-9a-fA-F]{40}(?![0-9a-fA-F])/g, (m) => checksum(m));
// ... or short, as on the first screen ("0x3C44…93BC").
export const shortIn = (s) => text(s).replace(/0x[0-9a-fA-F]{40}(?![0-9a-fA-F])/g, (m) => shortAddress(m));

// "anvil (31337)" -> "anvil"; the chain id stays in the Details fold.
export function chainName(request) {
  const c = text(request.chain);
  const m = /^(.*) \(\d+\)$/.exec(c);
  return m ? m[1] : c || `chain ${text(request.chain_id)}`;
}

const EXPLORERS = {
  1: 'https://etherscan.io', 10: 'https://optimistic.etherscan.io', 8453: 'https://basescan.org',
  42161: 'https://arbiscan.io', 137: 'https://polygonscan.com', 11155111: 'https://sepolia.etherscan.io',
  84532: 'https://sepolia.basescan.org',
};

// The explorer page of a transaction, when the chain has a public explorer (a dev chain has none).
export function explorerTx(chainId, txHash) {
  const base = EXPLORERS[Number(text(chainId))];
  return base && /^0x[0-9a-f]{64}$/i.test(text(txHash)) ? `${base}/tx/${text(txHash)}` : null;
}

// The total network fee the owner may pay: gas limit x max fee per gas, in wei (or null).
export function feeWei(tx) {
  if (!tx) return null;
  const gas = bigOf(tx.gas_limit), price = bigOf(tx.max_fee_per_gas);
  return gas === null || price === null ? null : gas * price;
}

// The native asset's price, when an action of this request carries it (the signer's policy price).
export function nativePrice(request) {
  for (const a of Array.isArray(request.actions) ? request.actions : []) {
    if (a && a.token === 'native' && a.price_usd !== undefined && a.price_usd !== null) return a.price_usd;
  }
  return null;
}

export const nativeSymbol = (request) => {
  for (const a of Array.isArray(request.actions) ? request.actions : []) if (a && a.token === 'native' && a.symbol) return text(a.symbol);
  return 'ETH';
};

// A fee in the native unit, rounded up to 6 significant decimals so it is never understated.
export function feeText(wei, symbol) {
  const unit = 10n ** 12n;  // 0.000001 ETH
  const rounded = ((wei + unit - 1n) / unit) * unit;
  return `${rounded === 0n ? '0' : formatUnits(rounded, 18)} ${symbol}`;
}

// The rules that escalated, in words, each once; the rest (passed checks, rule ids) for the fold.
export function escalatedRules(escalation) {
  const esc = escalation && typeof escalation === 'object' ? escalation : {};
  const findings = Array.isArray(esc.findings) ? esc.findings : [];
  const words = [], seen = new Set(), details = [];
  const add = (reason) => {
    const s = shortIn(reason).trim();
    if (s && !seen.has(s)) { seen.add(s); words.push(s); }
  };
  const escalating = findings.filter((f) => f && f.outcome === 'escalate');
  if (escalating.length) escalating.forEach((f) => add(f.reason)); else add(esc.reason);
  details.push({ rule_id: text(esc.rule_id), reason: checksumIn(esc.reason), outcome: 'decided' });
  for (const f of findings) if (f) details.push({ rule_id: text(f.rule_id), reason: checksumIn(f.reason), outcome: text(f.outcome) });
  return { words, details };
}

// What the node says changes in the owner's balances: only rows for the main account.
export function balanceChanges(simulation, mainAddress) {
  if (!simulation || typeof simulation !== 'object' || !Array.isArray(simulation.changes)) return null;
  const main = text(mainAddress).toLowerCase();
  const rows = [];
  for (const c of simulation.changes) {
    if (!c || typeof c !== 'object') continue;
    if (main && text(c.account).toLowerCase() !== main) continue;
    const delta = bigOf(c.delta), decimals = Number(text(c.decimals));
    if (delta === null || !Number.isInteger(decimals) || decimals < 0 || decimals > 36) continue;
    const symbol = text(c.symbol) || (c.asset === 'native' ? 'ETH' : shortAddress(c.asset));
    const sign = delta < 0n ? '−' : '+';
    rows.push({ delta, text: `${sign}${formatUnits(delta < 0n ? -delta : delta, decimals)} ${symbol}` });
  }
  return { source: text(simulation.source), rows };
}

// A request id told apart from its neighbours: ids share their sequence prefix, so the tail.
export const shortId = (requestId) => '#' + text(requestId).slice(-6);
