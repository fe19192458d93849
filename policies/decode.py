"""Derive every action of a request from its raw bytes, never from the caller's description.

Each known function is declared by its canonical signature; its arguments are read by
`policies.abi`, which accepts only their exact canonical encoding, so every malformation (short
data, dirty bits, trailing or stray bytes, out-of-range offsets) becomes a `decode.malformed`
finding instead of a guess. Wrappers (multicall, Multicall3, Safe, MultiSend, ERC-4337/ERC-7579
accounts, Kernel, the Delegation Framework) are unpacked recursively, so an approval or transfer
cannot hide inside one. A call whose selector is not declared here is recorded as an undecoded
ContractCall: the evaluator denies it unless the policy names it under `opaque_calls`.

Whose tokens move: every inner call is counted as the wallet's own spending, whoever the wrapper
makes `msg.sender` (the smart account, the Multicall3 contract, a delegator's account). For
Multicall3 and delegations this over-counts, which only makes limits stricter.
`decode` never raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from policies.abi import AbiError, decode_args
from policies.intent import (
    NATIVE,
    Action,
    Approval,
    Call,
    Claim,
    ContractCall,
    Decoded,
    Forbidden,
    RouterPayout,
    Swap,
    Transfer,
    Wrap,
)
from policies.kernel.keccak import keccak256

MAX_INNER_CALLS = 256
MAX_UINT256 = 2**256 - 1
_LOWER_ADDRESS = re.compile(r"0x[0-9a-f]{40}")


# Selectors: tests/policies/test_decode.py checks each against keccak of its signature (eth_utils).
TRANSFER = bytes.fromhex("a9059cbb")  # transfer(address,uint256)
TRANSFER_FROM = bytes.fromhex("23b872dd")  # transferFrom(address,address,uint256)
APPROVE = bytes.fromhex("095ea7b3")  # approve(address,uint256)
INCREASE_ALLOWANCE = bytes.fromhex("39509351")  # increaseAllowance(address,uint256)
PERMIT = bytes.fromhex("d505accf")  # permit(address,address,uint256,uint256,uint8,bytes32,bytes32)
PERMIT2_APPROVE = bytes.fromhex("87517c45")  # approve(address,address,uint160,uint48)
SET_APPROVAL_FOR_ALL = bytes.fromhex("a22cb465")  # setApprovalForAll(address,bool)
MULTICALL = bytes.fromhex("ac9650d8")  # multicall(bytes[])
MULTICALL_DEADLINE = bytes.fromhex("5ae401dc")  # multicall(uint256,bytes[])
EXEC_TRANSACTION = bytes.fromhex("6a761202")  # Safe execTransaction(...)
MULTI_SEND = bytes.fromhex("8d80ff0a")  # multiSend(bytes)
EXECUTE = bytes.fromhex(
    "b61d27f6"
)  # execute(address,uint256,bytes): ERC-4337 accounts, Coinbase Smart Wallet
EXECUTE_BATCH_3 = bytes.fromhex("47e1da2a")  # executeBatch(address[],uint256[],bytes[])
EXECUTE_BATCH_TUPLES = bytes.fromhex(
    "34fcd5be"
)  # executeBatch((address,uint256,bytes)[]): Coinbase, Kernel v2
EXECUTE_BATCH_2 = bytes.fromhex("18dfb3c7")  # executeBatch(address[],bytes[])
KERNEL_V2_EXECUTE = bytes.fromhex("51945447")  # execute(address,uint256,bytes,uint8)
ERC7579_EXECUTE = bytes.fromhex("e9ae5c53")  # execute(bytes32,bytes): ERC-7579 accounts, Kernel v3
ERC7579_EXECUTE_FROM_EXECUTOR = bytes.fromhex("d691c964")  # executeFromExecutor(bytes32,bytes)
MC3_AGGREGATE = bytes.fromhex("252dba42")  # aggregate((address,bytes)[])
MC3_AGGREGATE3 = bytes.fromhex("82ad56cb")  # aggregate3((address,bool,bytes)[])
MC3_AGGREGATE3_VALUE = bytes.fromhex("174dea71")  # aggregate3Value((address,bool,uint256,bytes)[])
MC3_TRY_AGGREGATE = bytes.fromhex("bce38bd7")  # tryAggregate(bool,(address,bytes)[])
MC3_TRY_BLOCK_AND_AGGREGATE = bytes.fromhex("399542e9")  # tryBlockAndAggregate(bool,(address,bytes)[])
MC3_BLOCK_AND_AGGREGATE = bytes.fromhex("c3077fa9")  # blockAndAggregate((address,bytes)[])
REDEEM_DELEGATIONS = bytes.fromhex("cef6d209")  # redeemDelegations(bytes[],bytes32[],bytes[])

TOKEN_SELECTORS = frozenset(
    {TRANSFER, TRANSFER_FROM, APPROVE, INCREASE_ALLOWANCE, PERMIT, SET_APPROVAL_FOR_ALL}
)
"""Selectors that, sent to a token, decode to a Transfer or Approval the evaluator checks."""


def selector_of(signature: str) -> bytes:
    """First four bytes of keccak256 of a canonical signature such as "transfer(address,uint256)"."""
    return keccak256(signature.encode())[:4]


def encode_erc20_transfer(recipient: str, amount: int) -> bytes:
    """Calldata of `transfer(recipient, amount)`; the signer builds token transfers itself."""
    if not (isinstance(recipient, str) and len(recipient) == 42 and recipient[:2] == "0x"):
        raise ValueError(f"recipient must be a 0x-prefixed 20-byte address, got {recipient!r}")
    body = bytes.fromhex(recipient[2:])
    if not 0 <= amount <= MAX_UINT256:
        raise ValueError("amount must fit in uint256")
    return TRANSFER + bytes(12) + body + amount.to_bytes(32, "big")


class _Malformed(Exception):
    """Arguments that do not mean what their selector says (bad operation, unknown mode...)."""


class _Exhausted(Exception):
    """More inner calls than any honest request needs."""


_Inner = tuple[str, int, bytes]  # (to, value, data) of a nested call


# ---- ERC-7579 execution modes (shared by execute, executeFromExecutor and redeemDelegations) -----

CALLTYPE_SINGLE, CALLTYPE_BATCH, CALLTYPE_DELEGATECALL = 0x00, 0x01, 0xFF
EXECTYPE_DEFAULT, EXECTYPE_TRY = 0x00, 0x01


def _erc7579(walker: _Walker, mode: bytes, payload: bytes, what: str) -> list[_Inner]:
    """The calls an ERC-7579 mode and execution calldata make; delegatecall is forbidden.

    mode = callType (1 byte) | execType (1) | unused (4) | modeSelector (4) | modePayload (22). Only
    the plain modes are understood, so the other 30 bytes must be zero: a mode selector or payload
    can change what an account does, and what the signer cannot read it refuses.
    """
    call_type, exec_type = mode[0], mode[1]
    if exec_type not in (EXECTYPE_DEFAULT, EXECTYPE_TRY):
        raise _Malformed(f"{what}: unknown ERC-7579 exec type 0x{exec_type:02x}")
    if any(mode[2:]):
        raise _Malformed(
            f"{what}: ERC-7579 mode 0x{mode.hex()} sets a mode selector or payload the signer does not decode"
        )
    if call_type == CALLTYPE_DELEGATECALL:
        target = "0x" + payload[:20].hex() if len(payload) >= 20 else "an unreadable target"
        walker.actions.append(Forbidden("forbidden.delegatecall", f"{what} delegatecalls {target}"))
        return []
    if call_type == CALLTYPE_SINGLE:
        if len(payload) < 52:  # abi.encodePacked(target, value, callData)
            raise _Malformed(f"{what}: a single execution is shorter than target and value")
        return [("0x" + payload[:20].hex(), int.from_bytes(payload[20:52], "big"), payload[52:])]
    if call_type == CALLTYPE_BATCH:  # abi.encode(Execution[]) with Execution = (target, value, callData)
        try:
            (executions,) = decode_args("(address,uint256,bytes)[]", payload)
        except AbiError as exc:
            raise _Malformed(f"{what}: batch executions: {exc}") from exc
        return [(t, v, d) for t, v, d in executions]
    raise _Malformed(f"{what}: unknown ERC-7579 call type 0x{call_type:02x}")


# ---- handlers: decoded arguments in, inner calls out ----------------------------------------------

_Handler = Callable[["_Walker", str, tuple[Any, ...]], list[_Inner]]


@dataclass(frozen=True, slots=True)
class _Known:
    signature: str
    types: str  # the argument list of `signature`
    handler: _Handler


def _transfer(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(Transfer(w.chain_id, to, a[0], a[1]))
    return []


def _transfer_from(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(Transfer(w.chain_id, to, a[1], a[2]))
    return []


def _approval(method: str, spender: int, amount: int) -> _Handler:
    def handler(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
        w.actions.append(Approval(w.chain_id, to, a[spender], a[amount], method))
        return []

    return handler


def _permit2_approve(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    token, spender, amount = a[0], a[1], a[2]
    w.actions.append(
        Approval(w.chain_id, token, spender, MAX_UINT256 if amount == 2**160 - 1 else amount, "permit2")
    )
    return []


def _set_approval_for_all(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(Approval(w.chain_id, to, a[0], MAX_UINT256 if a[1] else 0, "setApprovalForAll"))
    return []


def _self_calls(index: int) -> _Handler:
    """multicall(bytes[]) forms: each element is a call the contract makes to itself."""

    def handler(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
        return [(to, 0, data) for data in a[index]]

    return handler


def _exec_transaction(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    inner_to, value, data, operation, gas_price = a[0], a[1], a[2], a[3], a[6]
    if operation > 1:
        raise _Malformed(f"Safe operation {operation} is neither call nor delegatecall")
    if operation == 1:
        w.actions.append(Forbidden("forbidden.delegatecall", f"Safe transaction delegatecalls {inner_to}"))
        return []
    if gas_price:
        w.actions.append(
            Forbidden("forbidden.safe_refund", "Safe transaction pays a gas refund out of the wallet")
        )
    return [(inner_to, value, data)]


def _multi_send(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    packed: bytes = a[0]
    inner: list[_Inner] = []
    pos = 0
    while pos < len(packed):
        if pos + 85 > len(packed):
            raise _Malformed("a MultiSend entry is truncated")
        operation = packed[pos]
        entry_to = "0x" + packed[pos + 1 : pos + 21].hex()
        value = int.from_bytes(packed[pos + 21 : pos + 53], "big")
        length = int.from_bytes(packed[pos + 53 : pos + 85], "big")
        if length > len(packed) - pos - 85:
            raise _Malformed("a MultiSend entry's data is truncated")
        if operation > 1:
            raise _Malformed(f"MultiSend operation {operation} is neither call nor delegatecall")
        if len(inner) >= MAX_INNER_CALLS:
            raise _Malformed("too many MultiSend entries")
        if operation == 1:
            w.actions.append(Forbidden("forbidden.delegatecall", f"MultiSend delegatecalls {entry_to}"))
        else:
            inner.append((entry_to, value, packed[pos + 85 : pos + 85 + length]))
        pos += 85 + length
    return inner


def _execute(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    return [(a[0], a[1], a[2])]


def _kernel_v2_execute(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    operation = a[3]
    if operation > 1:
        raise _Malformed(f"Kernel operation {operation} is neither call nor delegatecall")
    if operation == 1:
        w.actions.append(Forbidden("forbidden.delegatecall", f"Kernel execute delegatecalls {a[0]}"))
        return []
    return [(a[0], a[1], a[2])]


def _execute_batch_3(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    targets, values, datas = a
    if len(targets) != len(datas) or len(values) not in (0, len(datas)):
        raise _Malformed("executeBatch arrays differ in length")
    return [(t, values[i] if values else 0, d) for i, (t, d) in enumerate(zip(targets, datas))]


def _execute_batch_2(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    targets, datas = a
    if len(targets) != len(datas):
        raise _Malformed("executeBatch arrays differ in length")
    return [(t, 0, d) for t, d in zip(targets, datas)]


def _execute_batch_tuples(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    return [(t, v, d) for t, v, d in a[0]]


def _erc7579_execute(name: str) -> _Handler:
    def handler(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
        return _erc7579(w, a[0], a[1], f"{name} on {to}")

    return handler


def _mc3(calls_index: int, value_index: int | None = None) -> _Handler:
    """Multicall3: the contract calls each target itself (msg.sender = Multicall3)."""

    def handler(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
        return [(c[0], 0 if value_index is None else c[value_index], c[-1]) for c in a[calls_index]]

    return handler


def _redeem_delegations(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    """Delegation Framework: each execution runs in the delegator's account under an ERC-7579 mode.

    The permission contexts (signed delegation chains) authorize; they are not calls the wallet makes.
    """
    contexts, modes, executions = a
    if not len(contexts) == len(modes) == len(executions):
        raise _Malformed("redeemDelegations arrays differ in length")
    inner: list[_Inner] = []
    for i, (mode, payload) in enumerate(zip(modes, executions)):
        inner += _erc7579(w, mode, payload, f"redeemDelegations execution {i} via {to}")
    return inner


def _exact_input_single(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    token_in, token_out, fee, recipient, deadline, amount_in, amount_out_min, limit = a[0]
    w.actions.append(
        Swap(w.chain_id, to, token_in, token_out, fee, recipient, deadline, amount_in, amount_out_min, limit)
    )
    return []


def _unwrap_weth9(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(RouterPayout(w.chain_id, to, NATIVE, a[1], "unwrapWETH9"))
    return []


def _sweep_token(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(RouterPayout(w.chain_id, to, a[0], a[2], "sweepToken"))
    return []


def _refund_eth(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(RouterPayout(w.chain_id, to, NATIVE, None, "refundETH"))
    return []


def _deposit(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(Wrap(w.chain_id, to, w.value, unwrap=False))
    return []


def _withdraw(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(Wrap(w.chain_id, to, a[0], unwrap=True))
    return []


def _claim(w: _Walker, to: str, a: tuple[Any, ...]) -> list[_Inner]:
    w.actions.append(Claim(w.chain_id, to, a[0], a[1], a[2]))
    return []


def _known(signature: str, handler: _Handler) -> tuple[bytes, _Known]:
    return selector_of(signature), _Known(signature, signature[signature.index("(") + 1 : -1], handler)


KNOWN: dict[bytes, _Known] = dict(
    [
        _known("transfer(address,uint256)", _transfer),
        _known("transferFrom(address,address,uint256)", _transfer_from),
        _known("approve(address,uint256)", _approval("approve", 0, 1)),
        _known("increaseAllowance(address,uint256)", _approval("increaseAllowance", 0, 1)),
        _known("permit(address,address,uint256,uint256,uint8,bytes32,bytes32)", _approval("permit", 1, 2)),
        _known("approve(address,address,uint160,uint48)", _permit2_approve),
        _known("setApprovalForAll(address,bool)", _set_approval_for_all),
        _known("multicall(bytes[])", _self_calls(0)),
        _known("multicall(uint256,bytes[])", _self_calls(1)),
        _known(
            "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
            _exec_transaction,
        ),
        _known("multiSend(bytes)", _multi_send),
        _known("execute(address,uint256,bytes)", _execute),
        _known("execute(address,uint256,bytes,uint8)", _kernel_v2_execute),
        _known("executeBatch(address[],uint256[],bytes[])", _execute_batch_3),
        _known("executeBatch((address,uint256,bytes)[])", _execute_batch_tuples),
        _known("executeBatch(address[],bytes[])", _execute_batch_2),
        _known("execute(bytes32,bytes)", _erc7579_execute("ERC-7579 execute")),
        _known("executeFromExecutor(bytes32,bytes)", _erc7579_execute("ERC-7579 executeFromExecutor")),
        _known("aggregate((address,bytes)[])", _mc3(0)),
        _known("aggregate3((address,bool,bytes)[])", _mc3(0)),
        _known("aggregate3Value((address,bool,uint256,bytes)[])", _mc3(0, 2)),
        _known("tryAggregate(bool,(address,bytes)[])", _mc3(1)),
        _known("tryBlockAndAggregate(bool,(address,bytes)[])", _mc3(1)),
        _known("blockAndAggregate((address,bytes)[])", _mc3(0)),
        _known("redeemDelegations(bytes[],bytes32[],bytes[])", _redeem_delegations),
        # Uniswap v3 SwapRouter (exact input, one pool) and what it pays out; WETH9 (docs/defi.md)
        _known(
            "exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))",
            _exact_input_single,
        ),
        _known("unwrapWETH9(uint256,address)", _unwrap_weth9),
        _known("sweepToken(address,uint256,address)", _sweep_token),
        _known("refundETH()", _refund_eth),
        _known("deposit()", _deposit),
        _known("withdraw(uint256)", _withdraw),
        _known("claim(uint256,address,uint256,bytes32[])", _claim),  # Uniswap's MerkleDistributor
    ]
)
"""Every function the signer decodes, by selector; any other selector is an undecoded call."""


# ---- the walk ---------------------------------------------------------------------------------


class _Walker:
    def __init__(self, call: Call, max_depth: int) -> None:
        self.chain_id = call.chain_id
        self.max_depth = max_depth
        self.actions: list[Action] = []
        self.calls = 0
        self.value = 0  # native value of the call being decoded (WETH deposit reads it)

    def visit(self, to: str, value: int, data: bytes, depth: int) -> None:
        if depth > self.max_depth:
            self.actions.append(
                Forbidden("decode.too_deep", f"calls nested more than {self.max_depth} levels deep")
            )
            return
        if depth > 0:
            self.calls += 1
            if self.calls > MAX_INNER_CALLS:
                raise _Exhausted
        if value > 0:
            self.actions.append(Transfer(self.chain_id, NATIVE, to, value))
        if not data:
            return
        if len(data) < 4:
            self.actions.append(Forbidden("decode.malformed", f"calldata to {to} is shorter than a selector"))
            return
        selector = data[:4]
        known = KNOWN.get(selector)
        self.actions.append(ContractCall(self.chain_id, to, selector, depth, value, known is not None))
        if known is None:
            return
        # Arguments are all read (and checked canonical) before any inner call is visited.
        self.value = value
        try:
            inner = known.handler(self, to, decode_args(known.types, data[4:]))
        except (AbiError, _Malformed) as exc:
            self.actions.append(Forbidden("decode.malformed", f"call 0x{selector.hex()} to {to}: {exc}"))
            return
        for inner_to, inner_value, inner_data in inner:
            self.visit(inner_to, inner_value, inner_data, depth + 1)


def decode(call: Call, max_depth: int = 8) -> Decoded:
    """Every action `call` would take, in discovery order; refusals become Forbidden actions."""
    actions: list[Action] = []
    if call.authorization_list:
        actions.append(
            Forbidden(
                "forbidden.eip7702",
                "EIP-7702 authorizations would hand the wallet's code to another contract",
            )
        )
    if call.raw_hash_signature:
        actions.append(Forbidden("forbidden.raw_hash", "a raw-hash signature could authorize anything"))
    if not (isinstance(call.to, str) and _LOWER_ADDRESS.fullmatch(call.to)):
        return Decoded(
            call, (*actions, Forbidden("decode.malformed", f"target {call.to!r} is not a lowercase address"))
        )
    if not (isinstance(call.value, int) and 0 <= call.value <= MAX_UINT256):
        return Decoded(call, (*actions, Forbidden("decode.malformed", "value is not a uint256")))
    walker = _Walker(call, max_depth)
    try:
        walker.visit(call.to, call.value, bytes(call.data), 0)
    except _Exhausted:
        walker.actions.append(Forbidden("decode.malformed", f"more than {MAX_INNER_CALLS} nested calls"))
    except Exception as exc:  # noqa: BLE001 - fail closed on anything unforeseen
        walker.actions.append(Forbidden("decode.malformed", f"undecodable request ({type(exc).__name__})"))
    return Decoded(call, tuple(actions + walker.actions))
