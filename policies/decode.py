"""Derive every action of a request from its raw bytes, never from the caller's description.

ABI words are decoded by hand: it is fast, and it lets every malformation (short data, dirty
address bits, out-of-range offsets) become a `decode.malformed` finding instead of a guess.
Wrappers (multicall, Safe, MultiSend, ERC-4337 accounts) are unpacked recursively, so an
approval or transfer cannot hide inside one. `decode` never raises.
"""

from __future__ import annotations

import re
from collections.abc import Callable


from policies.intent import NATIVE, Action, Approval, Call, ContractCall, Decoded, Forbidden, Transfer
from policies.kernel.keccak import keccak256

MAX_INNER_CALLS = 256
MAX_UINT256 = 2**256 - 1
_WORD = 32
_LOWER_ADDRESS = re.compile(r"0x[0-9a-f]{40}")

# Selectors: tests/policies/test_decode.py checks each against keccak of its signature.
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
EXECUTE = bytes.fromhex("b61d27f6")  # execute(address,uint256,bytes)
EXECUTE_BATCH_3 = bytes.fromhex("47e1da2a")  # executeBatch(address[],uint256[],bytes[])
EXECUTE_BATCH_TUPLES = bytes.fromhex("34fcd5be")  # executeBatch((address,uint256,bytes)[])
EXECUTE_BATCH_2 = bytes.fromhex("18dfb3c7")  # executeBatch(address[],bytes[])

TOKEN_SELECTORS = frozenset({TRANSFER, TRANSFER_FROM, APPROVE, INCREASE_ALLOWANCE, PERMIT, SET_APPROVAL_FOR_ALL})
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


# ---- ABI reading ------------------------------------------------------------------------------


class _Malformed(Exception):
    """Arguments that do not decode as their selector says."""


class _Exhausted(Exception):
    """More inner calls than any honest request needs."""


def _word(buf: bytes, pos: int) -> int:
    if pos < 0 or pos + _WORD > len(buf):
        raise _Malformed("arguments are too short")
    return int.from_bytes(buf[pos : pos + _WORD], "big")


def _uint(buf: bytes, pos: int, bits: int) -> int:
    value = _word(buf, pos)
    if value >> bits:
        raise _Malformed(f"a uint{bits} argument has its high bits set")
    return value


def _addr(buf: bytes, pos: int) -> str:
    return "0x%040x" % _uint(buf, pos, 160)


def _bool(buf: bytes, pos: int) -> bool:
    value = _word(buf, pos)
    if value > 1:
        raise _Malformed("a bool argument is neither 0 nor 1")
    return value == 1


def _target(buf: bytes, base: int, head: int) -> int:
    """Follow an offset word at `head`, relative to `base`; it must land inside `buf`."""
    offset = _word(buf, head)
    if offset >= len(buf) or base + offset + _WORD > len(buf):
        raise _Malformed("an offset points outside the arguments")
    return base + offset


def _bytes_at(buf: bytes, pos: int) -> bytes:
    length = _word(buf, pos)
    if length > len(buf) - pos - _WORD:
        raise _Malformed("a bytes argument runs past the end of the data")
    return buf[pos + _WORD : pos + _WORD + length]


def _length(buf: bytes, pos: int, element_words: int = 1) -> int:
    n = _word(buf, pos)
    if n > (len(buf) - pos - _WORD) // (_WORD * element_words) or n > MAX_INNER_CALLS:
        raise _Malformed("an array length is larger than the data")
    return n


def _bytes_array(buf: bytes, pos: int) -> list[bytes]:
    n = _length(buf, pos)
    base = pos + _WORD
    return [_bytes_at(buf, _target(buf, base, base + i * _WORD)) for i in range(n)]


def _address_array(buf: bytes, pos: int) -> list[str]:
    n = _length(buf, pos)
    return [_addr(buf, pos + _WORD * (1 + i)) for i in range(n)]


def _uint_array(buf: bytes, pos: int) -> list[int]:
    n = _length(buf, pos)
    return [_word(buf, pos + _WORD * (1 + i)) for i in range(n)]


# ---- the walk ---------------------------------------------------------------------------------

_Inner = tuple[str, int, bytes]  # (to, value, data) of a nested call


class _Walker:
    def __init__(self, call: Call, max_depth: int) -> None:
        self.chain_id = call.chain_id
        self.max_depth = max_depth
        self.actions: list[Action] = []
        self.calls = 0

    def visit(self, to: str, value: int, data: bytes, depth: int) -> None:
        if depth > self.max_depth:
            self.actions.append(Forbidden("decode.too_deep", f"calls nested more than {self.max_depth} levels deep"))
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
        selector, args = data[:4], data[4:]
        self.actions.append(ContractCall(self.chain_id, to, selector, depth))
        handler = _HANDLERS.get(selector)
        if handler is None:
            return
        try:
            inner = handler(self, to, args)
        except _Malformed as exc:
            self.actions.append(Forbidden("decode.malformed", f"call 0x{selector.hex()} to {to}: {exc}"))
            return
        for inner_to, inner_value, inner_data in inner:
            self.visit(inner_to, inner_value, inner_data, depth + 1)

    # Handlers parse all their arguments before any inner call is visited, and return those calls.

    def transfer(self, to: str, args: bytes) -> list[_Inner]:
        self.actions.append(Transfer(self.chain_id, to, _addr(args, 0), _word(args, 32)))
        return []

    def transfer_from(self, to: str, args: bytes) -> list[_Inner]:
        _addr(args, 0)
        self.actions.append(Transfer(self.chain_id, to, _addr(args, 32), _word(args, 64)))
        return []

    def approve(self, to: str, args: bytes) -> list[_Inner]:
        self.actions.append(Approval(self.chain_id, to, _addr(args, 0), _word(args, 32), "approve"))
        return []

    def increase_allowance(self, to: str, args: bytes) -> list[_Inner]:
        self.actions.append(Approval(self.chain_id, to, _addr(args, 0), _word(args, 32), "increaseAllowance"))
        return []

    def permit(self, to: str, args: bytes) -> list[_Inner]:
        _addr(args, 0)
        spender, amount = _addr(args, 32), _word(args, 64)
        _word(args, 96)
        _uint(args, 128, 8)
        _word(args, 160), _word(args, 192)
        self.actions.append(Approval(self.chain_id, to, spender, amount, "permit"))
        return []

    def permit2_approve(self, to: str, args: bytes) -> list[_Inner]:
        token, spender, amount = _addr(args, 0), _addr(args, 32), _uint(args, 64, 160)
        _uint(args, 96, 48)
        if amount == 2**160 - 1:
            amount = MAX_UINT256
        self.actions.append(Approval(self.chain_id, token, spender, amount, "permit2"))
        return []

    def set_approval_for_all(self, to: str, args: bytes) -> list[_Inner]:
        operator, approved = _addr(args, 0), _bool(args, 32)
        self.actions.append(Approval(self.chain_id, to, operator, MAX_UINT256 if approved else 0,
                                     "setApprovalForAll"))
        return []

    def multicall(self, to: str, args: bytes) -> list[_Inner]:
        return [(to, 0, data) for data in _bytes_array(args, _target(args, 0, 0))]

    def multicall_deadline(self, to: str, args: bytes) -> list[_Inner]:
        _word(args, 0)
        return [(to, 0, data) for data in _bytes_array(args, _target(args, 0, 32))]

    def exec_transaction(self, to: str, args: bytes) -> list[_Inner]:
        inner_to, value = _addr(args, 0), _word(args, 32)
        data = _bytes_at(args, _target(args, 0, 64))
        operation = _uint(args, 96, 8)
        _word(args, 128), _word(args, 160)
        gas_price = _word(args, 192)
        _addr(args, 224), _addr(args, 256)
        _bytes_at(args, _target(args, 0, 288))
        if operation > 1:
            raise _Malformed(f"Safe operation {operation} is neither call nor delegatecall")
        if operation == 1:
            self.actions.append(Forbidden("forbidden.delegatecall", f"Safe transaction delegatecalls {inner_to}"))
            return []
        if gas_price:
            self.actions.append(Forbidden("forbidden.safe_refund",
                                          "Safe transaction pays a gas refund out of the wallet"))
        return [(inner_to, value, data)]

    def multi_send(self, to: str, args: bytes) -> list[_Inner]:
        packed = _bytes_at(args, _target(args, 0, 0))
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
                self.actions.append(Forbidden("forbidden.delegatecall", f"MultiSend delegatecalls {entry_to}"))
            else:
                inner.append((entry_to, value, packed[pos + 85 : pos + 85 + length]))
            pos += 85 + length
        return inner

    def execute(self, to: str, args: bytes) -> list[_Inner]:
        return [(_addr(args, 0), _word(args, 32), _bytes_at(args, _target(args, 0, 64)))]

    def execute_batch_3(self, to: str, args: bytes) -> list[_Inner]:
        targets = _address_array(args, _target(args, 0, 0))
        values = _uint_array(args, _target(args, 0, 32))
        datas = _bytes_array(args, _target(args, 0, 64))
        if len(targets) != len(datas) or len(values) not in (0, len(datas)):
            raise _Malformed("executeBatch arrays differ in length")
        return [(t, values[i] if values else 0, d) for i, (t, d) in enumerate(zip(targets, datas))]

    def execute_batch_2(self, to: str, args: bytes) -> list[_Inner]:
        targets = _address_array(args, _target(args, 0, 0))
        datas = _bytes_array(args, _target(args, 0, 32))
        if len(targets) != len(datas):
            raise _Malformed("executeBatch arrays differ in length")
        return [(t, 0, d) for t, d in zip(targets, datas)]

    def execute_batch_tuples(self, to: str, args: bytes) -> list[_Inner]:
        pos = _target(args, 0, 0)
        n = _length(args, pos)
        base = pos + _WORD
        inner: list[_Inner] = []
        for i in range(n):
            at = _target(args, base, base + i * _WORD)
            inner.append((_addr(args, at), _word(args, at + 32), _bytes_at(args, _target(args, at, at + 64))))
        return inner


_HANDLERS: dict[bytes, Callable[[_Walker, str, bytes], list[_Inner]]] = {
    TRANSFER: _Walker.transfer,
    TRANSFER_FROM: _Walker.transfer_from,
    APPROVE: _Walker.approve,
    INCREASE_ALLOWANCE: _Walker.increase_allowance,
    PERMIT: _Walker.permit,
    PERMIT2_APPROVE: _Walker.permit2_approve,
    SET_APPROVAL_FOR_ALL: _Walker.set_approval_for_all,
    MULTICALL: _Walker.multicall,
    MULTICALL_DEADLINE: _Walker.multicall_deadline,
    EXEC_TRANSACTION: _Walker.exec_transaction,
    MULTI_SEND: _Walker.multi_send,
    EXECUTE: _Walker.execute,
    EXECUTE_BATCH_3: _Walker.execute_batch_3,
    EXECUTE_BATCH_TUPLES: _Walker.execute_batch_tuples,
    EXECUTE_BATCH_2: _Walker.execute_batch_2,
}


def decode(call: Call, max_depth: int = 8) -> Decoded:
    """Every action `call` would take, in discovery order; refusals become Forbidden actions."""
    actions: list[Action] = []
    if call.authorization_list:
        actions.append(Forbidden("forbidden.eip7702", "EIP-7702 authorizations would hand the wallet's code to "
                                 "another contract"))
    if call.raw_hash_signature:
        actions.append(Forbidden("forbidden.raw_hash", "a raw-hash signature could authorize anything"))
    if not (isinstance(call.to, str) and _LOWER_ADDRESS.fullmatch(call.to)):
        return Decoded(call, (*actions, Forbidden("decode.malformed", f"target {call.to!r} is not a lowercase address")))
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
