"""Calldata builders for every wrapper ABI the signer unpacks, encoded with eth_abi (not our codec).

Each builder takes the inner calls as (to, value, data) and returns the wrapper's calldata; the
wrapper is sent to whichever contract the test chooses (a smart account, Multicall3, a Safe...).
"""

from __future__ import annotations

from collections.abc import Callable

from eth_abi import encode
from eth_utils import keccak

Inner = tuple[str, int, bytes]
Builder = Callable[[list[Inner]], bytes]


def sel(signature: str) -> bytes:
    return keccak(text=signature)[:4]


def call_data(signature: str, types: list[str], *args) -> bytes:
    return sel(signature) + encode(types, list(args))


def mode(call_type: int, exec_type: int = 0, rest: bytes = bytes(30)) -> bytes:
    """An ERC-7579 ModeCode: callType, execType, 4 unused bytes, modeSelector, modePayload."""
    return bytes([call_type, exec_type]) + rest


def single_execution(inner: Inner) -> bytes:
    to, value, data = inner
    return bytes.fromhex(to[2:]) + value.to_bytes(32, "big") + data


def batch_executions(calls: list[Inner]) -> bytes:
    return encode(["(address,uint256,bytes)[]"], [list(calls)])


def erc7579(function: str, call_type: int, exec_type: int = 0) -> Builder:
    def build(calls: list[Inner]) -> bytes:
        payload = single_execution(calls[0]) if call_type == 0 else batch_executions(calls)
        return call_data(
            f"{function}(bytes32,bytes)", ["bytes32", "bytes"], mode(call_type, exec_type), payload
        )

    build.single = call_type == 0  # type: ignore[attr-defined]
    return build


def _single(build: Builder) -> Builder:
    build.single = True  # type: ignore[attr-defined]
    return build


def _batch(build: Builder) -> Builder:
    build.single = False  # type: ignore[attr-defined]
    return build


def multisend_entry(op: int, to: str, value: int, data: bytes) -> bytes:
    return (
        bytes([op]) + bytes.fromhex(to[2:]) + value.to_bytes(32, "big") + len(data).to_bytes(32, "big") + data
    )


SAFE_EXEC = "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)"
ZERO = "0x" + "00" * 20

WRAPPERS: dict[str, Builder] = {
    "erc7579.execute.single": erc7579("execute", 0x00),
    "erc7579.execute.batch": erc7579("execute", 0x01),
    "erc7579.execute.try_single": erc7579("execute", 0x00, 0x01),
    "erc7579.execute.try_batch": erc7579("execute", 0x01, 0x01),
    "erc7579.executeFromExecutor.single": erc7579("executeFromExecutor", 0x00),
    "erc7579.executeFromExecutor.batch": erc7579("executeFromExecutor", 0x01),
    "multicall3.aggregate": _batch(
        lambda calls: call_data(
            "aggregate((address,bytes)[])", ["(address,bytes)[]"], [(t, d) for t, _, d in calls]
        )
    ),
    "multicall3.aggregate3": _batch(
        lambda calls: call_data(
            "aggregate3((address,bool,bytes)[])",
            ["(address,bool,bytes)[]"],
            [(t, False, d) for t, _, d in calls],
        )
    ),
    "multicall3.aggregate3Value": _batch(
        lambda calls: call_data(
            "aggregate3Value((address,bool,uint256,bytes)[])",
            ["(address,bool,uint256,bytes)[]"],
            [(t, True, v, d) for t, v, d in calls],
        )
    ),
    "multicall3.tryAggregate": _batch(
        lambda calls: call_data(
            "tryAggregate(bool,(address,bytes)[])",
            ["bool", "(address,bytes)[]"],
            False,
            [(t, d) for t, _, d in calls],
        )
    ),
    "multicall3.tryBlockAndAggregate": _batch(
        lambda calls: call_data(
            "tryBlockAndAggregate(bool,(address,bytes)[])",
            ["bool", "(address,bytes)[]"],
            True,
            [(t, d) for t, _, d in calls],
        )
    ),
    "multicall3.blockAndAggregate": _batch(
        lambda calls: call_data(
            "blockAndAggregate((address,bytes)[])", ["(address,bytes)[]"], [(t, d) for t, _, d in calls]
        )
    ),
    "coinbase.execute": _single(
        lambda calls: call_data("execute(address,uint256,bytes)", ["address", "uint256", "bytes"], *calls[0])
    ),
    "coinbase.executeBatch": _batch(
        lambda calls: call_data(
            "executeBatch((address,uint256,bytes)[])", ["(address,uint256,bytes)[]"], list(calls)
        )
    ),
    "kernel_v2.execute": _single(
        lambda calls: call_data(
            "execute(address,uint256,bytes,uint8)", ["address", "uint256", "bytes", "uint8"], *calls[0], 0
        )
    ),
    "delegation.redeemDelegations.single": _single(
        lambda calls: call_data(
            "redeemDelegations(bytes[],bytes32[],bytes[])",
            ["bytes[]", "bytes32[]", "bytes[]"],
            [b"\x01" * 70],
            [mode(0x00)],
            [single_execution(calls[0])],
        )
    ),
    "delegation.redeemDelegations.batch": _batch(
        lambda calls: call_data(
            "redeemDelegations(bytes[],bytes32[],bytes[])",
            ["bytes[]", "bytes32[]", "bytes[]"],
            [b""],
            [mode(0x01)],
            [batch_executions(calls)],
        )
    ),
    "safe.execTransaction": _single(
        lambda calls: call_data(
            SAFE_EXEC,
            [
                "address",
                "uint256",
                "bytes",
                "uint8",
                "uint256",
                "uint256",
                "uint256",
                "address",
                "address",
                "bytes",
            ],
            *calls[0],
            0,
            0,
            0,
            0,
            ZERO,
            ZERO,
            b"\x01" * 65,
        )
    ),
    "safe.multiSend": _batch(
        lambda calls: call_data(
            "multiSend(bytes)", ["bytes"], b"".join(multisend_entry(0, *c) for c in calls)
        )
    ),
    "erc4337.executeBatch3": _batch(
        lambda calls: call_data(
            "executeBatch(address[],uint256[],bytes[])",
            ["address[]", "uint256[]", "bytes[]"],
            [c[0] for c in calls],
            [c[1] for c in calls],
            [c[2] for c in calls],
        )
    ),
    "erc4337.executeBatch2": _batch(
        lambda calls: call_data(
            "executeBatch(address[],bytes[])",
            ["address[]", "bytes[]"],
            [c[0] for c in calls],
            [c[2] for c in calls],
        )
    ),
}
"""Wrappers whose inner calls name their own target. Multicall3 and aggregate carry no value except
aggregate3Value; the builders drop inner values where the ABI has no place for them."""

VALUE_CARRYING = {
    name
    for name in WRAPPERS
    if not (name.startswith("multicall3.") and name != "multicall3.aggregate3Value")
    and name != "erc4337.executeBatch2"
}
"""Wrappers that can pass native value to an inner call."""

WRAPPER_SELECTORS = sorted({"0x" + WRAPPERS[name]([(ZERO, 0, b"")])[:4].hex() for name in WRAPPERS})
