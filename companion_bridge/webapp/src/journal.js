// The page's approval journal: the same rules as the desktop companion's (companion_bridge/companion/
// journal.py, `admit` and `apply_quote`), checked against it by a differential property test.
// An approval is written here before it can leave the page and stays unsettled until a nonce quote
// signed by the signer shows its nonce *mined*; a settled entry is re-checked (CONFIRM_QUOTES later
// quotes over CONFIRM_SECONDS) and reopened if a newer quote shows the nonce unmined (a reorg).
// Never the raw transaction, never key material.
export const MAX_ENTRIES = 200;
export const MAX_UNSETTLED = 50;
export const CONFIRM_QUOTES = 3;
export const CONFIRM_SECONDS = 600;
export const MAX_CLOCK_SKEW = 120;

export class JournalFull extends Error {}

export const isSettled = (e) => e.settled_at !== null;

export function isFinal(e) {
  if (e.settled_by === null || e.seen_ts === null) return false;
  return e.confirmed >= CONFIRM_QUOTES && e.seen_ts - e.settled_by.quote_ts >= CONFIRM_SECONDS;
}

export function newEntry(fields) {
  return { reply: '', quoted_at: null, seen_ts: null, settled_at: null, settled_by: null, confirmed: 0, ...fields };
}

export function refuseIfFull(unsettled, maxUnsettled = MAX_UNSETTLED) {
  if (unsettled >= maxUnsettled) {
    throw new JournalFull(`${unsettled} approvals you signed are still unsettled (their nonces are not used as far as ` +
      'your signer has said): nothing more is signed until they are. Void the ones you do not want (send any ' +
      'transaction from the main account at that nonce).');
  }
}

// `entries` with `entry` added and the oldest settled ones dropped down to maxEntries, final ones first.
export function admit(entries, entry, maxEntries = MAX_ENTRIES, maxUnsettled = MAX_UNSETTLED) {
  if (entries.some((e) => e.tx_hash === entry.tx_hash)) return [...entries];
  refuseIfFull(entries.filter((e) => !isSettled(e)).length, maxUnsettled);
  const kept = [...entries, entry];
  const excess = kept.length - maxEntries;
  const droppable = [...kept.filter(isFinal), ...kept.filter((e) => isSettled(e) && !isFinal(e))];
  for (const old of droppable.slice(0, Math.max(excess, 0))) kept.splice(kept.indexOf(old), 1);
  return kept;
}

// Let a verified quote settle, confirm or reopen entries (mutated); true if any changed.
// quote: {main_account, main_nonce_mined: {chain id: count} | null, ts}
export function applyQuote(entries, quote, mainAddress, now) {
  if (quote.main_nonce_mined === null || quote.main_account.toLowerCase() !== mainAddress.toLowerCase()) return false;
  const fresh = Math.abs(now - quote.ts) <= MAX_CLOCK_SKEW;
  let changed = false;
  for (const e of entries) {
    const mined = quote.main_nonce_mined[String(e.chain_id)];
    if (mined === undefined || (e.seen_ts !== null && quote.ts <= e.seen_ts)) continue;
    if (e.quoted_at !== null && quote.ts < e.quoted_at) continue;
    if (e.quoted_at === null && !fresh) continue;
    e.seen_ts = quote.ts; changed = true;
    if (mined > e.nonce && !isSettled(e)) {
      e.settled_at = now; e.settled_by = { main_nonce_mined: mined, quote_ts: quote.ts }; e.confirmed = 0;
    } else if (mined > e.nonce) {
      e.confirmed += 1;
    } else if (isSettled(e)) {
      e.settled_at = null; e.settled_by = null; e.confirmed = 0;
    }
  }
  return changed;
}
