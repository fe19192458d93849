"""The signer's nonce quotes, as the companion may believe them.

`approvals.state` reaches the companion through the bridge, so a quote counts only if the signer's
identity key (from the pairing link, never from the bridge) signed it. Two uses, with different
rules: the nonce to sign an approval with must be fresh and never below the request's (a made-up
higher nonce would leave the bridge a transaction to send later); a quote that shows a nonce as
used settles a journal entry whenever it was made, since a nonce, once used, stays used.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from signer.devices import MAX_CLOCK_SKEW
from signer.identity import NONCE_DOMAIN, signed_by


@dataclass(frozen=True)
class NonceQuote:
    """A quote the signer signed: the main account's next nonce per chain (the mempool counted), at `ts`."""

    main_account: str
    main_nonce: dict[int, int]
    ts: float


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
    """The quote in an `approvals.state` reply, or None unless the signer signed exactly it."""
    if not signer_key or not isinstance(state, dict):
        return None
    quote = {k: state.get(k) for k in ("main_account", "main_nonce", "ts")}
    if not signed_by(signer_key, NONCE_DOMAIN, quote, state.get("nonce_sig")):
        return None
    ts, nonces = quote["ts"], _nonces(quote["main_nonce"])
    if not isinstance(quote["main_account"], str) or nonces is None:
        return None
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        return None
    return NonceQuote(quote["main_account"], nonces, float(ts))


def quoted_nonce(state: dict[str, Any], request: dict[str, Any], signer_key: str | None,
                 now: float | None = None) -> int | None:
    """The nonce to sign `request` with, from a nonce quote; None means keep the request's own.
    Taken only from a fresh quote the signer signed, and never below the request's: a nonce the
    bridge made up could leave it a signed transaction to send at a time of its choosing."""
    quote = verified_quote(state, signer_key)
    if quote is None:
        return None
    now = time.time() if now is None else now
    if abs(now - quote.ts) > MAX_CLOCK_SKEW:
        return None
    nonce = quote.main_nonce.get(int(request["tx"]["chain_id"]))
    if nonce is None or nonce < int(request["tx"]["nonce"]):
        return None
    return nonce
