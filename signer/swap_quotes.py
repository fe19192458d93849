"""The signer's own swap quotes: QuoterV2 `quoteExactInputSingle`, read over eth_call from every endpoint.

The quote sets the least a swap may accept (policies.defi). With a second endpoint configured
(`check_rpc_url`) both are asked and the HIGHER answer is used: a node that under-quotes to let a
bad minimum through is outvoted by the honest one, and one that over-quotes can only make the
signer refuse. An endpoint that fails leaves the quote unknown, which asks the owner.
"""

from __future__ import annotations

import asyncio

from policies.context import QuoteKey
from policies.defi import quote_key
from policies.index import PolicyIndex
from policies.intent import Decoded
from policies.kernel.rpc import JsonRpcHttp, RpcRemoteError, RpcUnreachable
from signer.chain import Chain

QUOTE_EXACT_INPUT_SINGLE = bytes.fromhex(
    "c6a5026a"
)  # quoteExactInputSingle((address,address,uint256,uint24,uint160))
MAX_QUOTED = 8  # swaps quoted per request: more are left unquoted (the owner is asked), so a request cannot
# make the signer wait on hundreds of node round trips


def _address_word(address: str) -> bytes:
    return bytes(12) + bytes.fromhex(address[2:])


def quote_calldata(token_in: str, token_out: str, amount_in: int, fee: int) -> bytes:
    """A static tuple is encoded in place: five words (the price limit is 0, as the swap's must be)."""
    return (
        QUOTE_EXACT_INPUT_SINGLE
        + _address_word(token_in)
        + _address_word(token_out)
        + amount_in.to_bytes(32, "big")
        + fee.to_bytes(32, "big")
        + bytes(32)
    )


async def _ask(endpoint: JsonRpcHttp, quoter: str, data: bytes) -> int | None:
    try:
        raw = await endpoint.call("eth_call", {"to": quoter, "data": "0x" + data.hex()}, "latest")
    except (RpcRemoteError, RpcUnreachable):
        return None
    if not isinstance(raw, str) or not raw.startswith("0x") or len(raw) < 2 + 64 * 4:
        return None  # QuoterV2 returns four words: amountOut, sqrtPriceX96After, ticks crossed, gas estimate
    try:
        return int(raw[2:66], 16)
    except ValueError:
        return None


async def read_quotes(chain: Chain, decoded: Decoded, index: PolicyIndex) -> dict[QuoteKey, int | None]:
    rules = index.swaps
    quotes: dict[QuoteKey, int | None] = {}
    if rules is None:
        return quotes
    endpoints = [chain.rpc] + ([chain.check] if chain.check is not None else [])
    for s in decoded.swaps():
        router = rules.routers.get((s.chain_id, s.router))
        if router is None or s.fee >= 2**24:
            continue
        key = quote_key(s.chain_id, router.quoter, s)
        if key in quotes:
            continue
        if len(quotes) >= MAX_QUOTED:
            quotes[key] = None
            continue
        data = quote_calldata(s.token_in, s.token_out, s.amount_in, s.fee)
        answers = await asyncio.gather(*(_ask(e, router.quoter, data) for e in endpoints))
        quotes[key] = None if any(a is None for a in answers) else max(a for a in answers if a is not None)
    return quotes
