"""The one call a Tier 3 swap lane lets the session key make: SwapRouter
`multicall([exactInputSingle(params), refundETH()])`, ETH in.

Why this shape: the router wraps exactly the `amountIn` the pool asks for and keeps any other ETH
sent with the call, which `refundETH()` then pays to whoever calls it. A stolen key could send the
lane's whole `value` with `amountIn` of 1 wei and collect the rest itself. With `refundETH()` inside
the same multicall the rest goes back to the caller, the main account, in the same call.

Every byte of this calldata is fixed by the lane (two `AllowedCalldata` ranges) except three words:
the deadline, `amountIn` and `amountOutMinimum`. The array's length, both elements' offsets and
lengths, the function inside, tokenIn (WETH), tokenOut, the pool fee, the recipient (the main
account), the price limit (0: no partial fill) and the trailing `refundETH()` are pinned, so the
router decodes nothing else from it.
"""

from __future__ import annotations

__all__ = [
    "EXACT_INPUT_SINGLE",
    "MULTICALL",
    "PIN_HEAD",
    "PIN_TAIL",
    "REFUND_ETH",
    "SINGLE_LENGTH",
    "TEMPLATE_LENGTH",
    "VARIABLE",
    "SwapCall",
    "decode_exact_input_single",
    "exact_input_single",
    "pinned_ranges",
    "swap_call",
]

from dataclasses import dataclass

MULTICALL = bytes.fromhex("ac9650d8")  # multicall(bytes[])
EXACT_INPUT_SINGLE = bytes.fromhex("414bf389")  # exactInputSingle((address,address,uint24,address,...))
REFUND_ETH = bytes.fromhex("12210e8a")  # refundETH()
SINGLE_LENGTH = 4 + 8 * 32  # exactInputSingle's calldata: a static tuple of eight words
TEMPLATE_LENGTH = 516
VARIABLE = (296, 392)  # deadline, amountIn, amountOutMinimum: the only bytes the session key chooses
PIN_HEAD = (4, VARIABLE[0])  # the array layout, the function, tokenIn, tokenOut, fee, recipient
PIN_TAIL = (VARIABLE[1], TEMPLATE_LENGTH)  # the price limit, the padding, and refundETH()


def _word(value: int) -> bytes:
    return value.to_bytes(32, "big")


def _address(address: str) -> bytes:
    return bytes(12) + bytes.fromhex(address.lower()[2:])


@dataclass(frozen=True, slots=True)
class SwapCall:
    """exactInputSingle's parameters."""

    token_in: str
    token_out: str
    fee: int
    recipient: str
    deadline: int
    amount_in: int
    min_out: int
    price_limit: int


def exact_input_single(s: SwapCall) -> bytes:
    return (
        EXACT_INPUT_SINGLE
        + _address(s.token_in)
        + _address(s.token_out)
        + _word(s.fee)
        + _address(s.recipient)
        + _word(s.deadline)
        + _word(s.amount_in)
        + _word(s.min_out)
        + _word(s.price_limit)
    )


def swap_call(s: SwapCall) -> bytes:
    """multicall([exactInputSingle(s), refundETH()]) in the ABI's standard encoding."""
    single = exact_input_single(s)
    refund = REFUND_ETH + bytes(28)
    data = (
        MULTICALL
        + _word(32)  # where the bytes[] starts
        + _word(2)  # two calls
        + _word(64)  # the first, after the two offsets
        + _word(64 + 32 + SINGLE_LENGTH + 28)  # the second, after the first's length and padded body
        + _word(SINGLE_LENGTH)
        + single
        + bytes(28)
        + _word(4)
        + refund
    )
    assert len(data) == TEMPLATE_LENGTH
    return data


def pinned_ranges(token_in: str, token_out: str, fee: int, recipient: str) -> tuple[bytes, bytes]:
    """The two byte ranges a swap lane's AllowedCalldata caveats pin (from PIN_HEAD and PIN_TAIL)."""
    data = swap_call(SwapCall(token_in, token_out, fee, recipient, 0, 0, 0, 0))
    return data[PIN_HEAD[0] : PIN_HEAD[1]], data[PIN_TAIL[0] : PIN_TAIL[1]]


def decode_exact_input_single(data: bytes) -> SwapCall | None:
    """exactInputSingle's parameters from its calldata, or None when it is not exactly that call."""
    if len(data) != SINGLE_LENGTH or data[:4] != EXACT_INPUT_SINGLE:
        return None
    words = [data[4 + 32 * i : 36 + 32 * i] for i in range(8)]
    for i in (0, 1, 3):  # addresses: the upper 12 bytes must be zero
        if words[i][:12] != bytes(12):
            return None
    n = [int.from_bytes(w, "big") for w in words]
    return SwapCall(
        "0x" + words[0][12:].hex(),
        "0x" + words[1][12:].hex(),
        n[2],
        "0x" + words[3][12:].hex(),
        n[4],
        n[5],
        n[6],
        n[7],
    )
