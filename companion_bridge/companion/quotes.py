"""The signer's nonce quotes, as the companion may believe them.

`approvals.state` reaches the companion through the bridge, so a quote counts only if the signer's
identity key (from the pairing link, never from the bridge) signed it. A quote carries two counts
per chain: `main_nonce`, the next nonce with the mempool counted, and `main_nonce_mined`, the
number of the main account's transactions mined. Two uses, with different rules: the nonce to sign
an approval with is the pending one, from a fresh quote and never below the request's (a made-up
higher nonce would leave the bridge a transaction to send later); a journal entry settles only on
the mined count, since a transaction that is merely in a mempool can be evicted and sent again
later by whoever holds it (companion.journal decides which quotes may settle which entry).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from signer.wire.approval_request import ApprovalRequestBody
from signer.wire.messages import MAX_CLOCK_SKEW, NONCE_DOMAIN, signed_by

QUOTE_FIELDS = ("main_account", "main_nonce", "main_nonce_mined", "ts")
LEGACY_FIELDS = ("main_account", "main_nonce", "ts")  # a signer from before the mined count


@dataclass(frozen=True)
class NonceQuote:
    """A quote the signer signed, at `ts` (the signer's clock): per chain, the main account's next
    nonce with the mempool counted, and its mined transaction count (None: a signer too old to
    say, whose quote may pick a nonce to sign with but never settles anything)."""

    main_account: str
    main_nonce: dict[int, int]
    ts: float
    main_nonce_mined: dict[int, int] | None = None

    def fresh(self, now: float | None = None) -> bool:
        """Made within MAX_CLOCK_SKEW of now by this device's clock: not a quote the bridge kept."""
        return abs((time.time() if now is None else now) - self.ts) <= MAX_CLOCK_SKEW


def _nonces(raw: Any) -> dict[int, int] | None:
    if not isinstance(raw, dict):
        return None
    nonces: dict[int, int] = {}
    for chain_id, nonce in raw.items():
        if not isinstance(chain_id, str) or not chain_id.isdigit():
            return None
        if not isinstance(nonce, int) or isinstance(nonce, bool) or nonce < 0:
            return None
        nonces[int(chain_id)] = nonce
    return nonces


def verified_quote(state: Any, signer_key: str | None) -> NonceQuote | None:
    """The quote in an `approvals.state` reply, or None unless the signer signed exactly it. The
    signature covers `main_nonce_mined` when the reply has it, so it cannot be stripped or bumped;
    a reply without it verifies only as the older three-field quote."""
    if not signer_key or not isinstance(state, dict):
        return None
    names = QUOTE_FIELDS if "main_nonce_mined" in state else LEGACY_FIELDS
    quote = {k: state.get(k) for k in names}
    if not signed_by(signer_key, NONCE_DOMAIN, quote, state.get("nonce_sig")):
        return None
    ts, nonces = quote["ts"], _nonces(quote["main_nonce"])
    mined = _nonces(quote["main_nonce_mined"]) if "main_nonce_mined" in quote else None
    if not isinstance(quote["main_account"], str) or nonces is None:
        return None
    if "main_nonce_mined" in quote and mined is None:
        return None
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        return None
    return NonceQuote(quote["main_account"], nonces, float(ts), mined)


def quoted_nonce(
    state: dict[str, Any], request: ApprovalRequestBody, signer_key: str | None, now: float | None = None
) -> int | None:
    """The nonce to sign `request` with, from a nonce quote; None means keep the request's own."""
    nonce_quote = verified_quote(state, signer_key)
    return None if nonce_quote is None else nonce_from(nonce_quote, request, now)


def nonce_from(quote: NonceQuote, request: ApprovalRequestBody, now: float | None = None) -> int | None:
    """The nonce to sign `request` with, from a verified quote; None means keep the request's own.
    Taken only from a fresh quote, and never below the request's: a nonce the bridge made up could
    leave it a signed transaction to send at a time of its choosing."""
    tx = request["tx"]
    if tx is None or not quote.fresh(now):
        return None
    nonce = quote.main_nonce.get(int(tx["chain_id"]))
    if nonce is None or nonce < int(tx["nonce"]):
        return None
    return nonce
