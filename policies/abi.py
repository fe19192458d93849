"""A strict ABI argument reader: only the canonical encoding of a signature's types is accepted.

"Decoded" must mean "every byte accounted for": after reading, the values are encoded again and the
result must equal the input, so trailing bytes, gaps between tails, shared or reordered offsets and
dirty padding are all refused. Reading is budgeted by the input's own length, so offsets that point
many array elements at one large tail cannot blow up the work. Types covered: address, bool,
uint<N>, bytes<N>, bytes, T[] and tuples; everything the wrapper ABIs the signer unpacks use.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

WORD = 32
MAX_ARRAY = 256  # no honest wrapper batches more calls; policies.decode bounds the total too


class AbiError(ValueError):
    """The bytes are not the canonical encoding of the expected types."""


class _Type:
    """One ABI type; `dynamic` and `head` are computed once, at parse time (this is the hot path)."""

    __slots__ = ("kind", "size", "items", "dynamic", "head")

    def __init__(self, kind: str, size: int = 0, items: tuple[_Type, ...] = ()) -> None:
        self.kind = kind  # "address" | "bool" | "uint" | "fixed" | "bytes" | "array" | "tuple"
        self.size = size  # bits for uint, length for fixed bytes<N>
        self.items = items  # element type (array) or members (tuple)
        self.dynamic: bool = kind in ("bytes", "array") or (kind == "tuple" and any(t.dynamic for t in items))
        self.head: int = sum(t.head for t in items) if kind == "tuple" and not self.dynamic else WORD


def _split(types: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(types):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(types[start:i])
            start = i + 1
    if types:
        parts.append(types[start:])
    return parts


def _parse(text: str) -> _Type:
    if text.endswith("[]"):
        return _Type("array", items=(_parse(text[:-2]),))
    if text.startswith("(") and text.endswith(")"):
        return _Type("tuple", items=tuple(_parse(t) for t in _split(text[1:-1])))
    if text in ("address", "bool", "bytes"):
        return _Type(text)
    if (
        text.startswith("uint")
        and text[4:].isdigit()
        and 8 <= int(text[4:]) <= 256
        and int(text[4:]) % 8 == 0
    ):
        return _Type("uint", size=int(text[4:]))
    if text.startswith("bytes") and text[5:].isdigit() and 1 <= int(text[5:]) <= 32:
        return _Type("fixed", size=int(text[5:]))
    raise ValueError(f"unsupported ABI type {text!r}")


@lru_cache(maxsize=None)
def parse_types(types: str) -> _Type:
    """The tuple type of a comma-separated type list such as "address,uint256,bytes"."""
    return _Type("tuple", items=tuple(_parse(t) for t in _split(types)))


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.budget = len(buf)  # a canonical encoding reads each byte exactly once

    def spend(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise AbiError("offsets reuse the same bytes")

    def word(self, pos: int) -> int:
        if pos < 0 or pos + WORD > len(self.buf):
            raise AbiError("arguments are too short")
        return int.from_bytes(self.buf[pos : pos + WORD], "big")

    def read(self, t: _Type, pos: int) -> Any:
        kind = t.kind
        if kind == "tuple":
            return self.tuple(t, pos)
        if kind == "array":
            return self.array(t.items[0], pos)
        if kind == "bytes":
            length = self.word(pos)
            if length > len(self.buf) - pos - WORD:
                raise AbiError("a bytes argument runs past the end of the data")
            self.spend(WORD + -(-length // WORD) * WORD)
            return self.buf[pos + WORD : pos + WORD + length]
        self.spend(WORD)
        value = self.word(pos)
        if kind == "address":
            if value >> 160:
                raise AbiError("an address argument has its high bits set")
            return "0x%040x" % value
        if kind == "bool":
            if value > 1:
                raise AbiError("a bool argument is neither 0 nor 1")
            return value == 1
        if kind == "uint":
            if value >> t.size:
                raise AbiError(f"a uint{t.size} argument has its high bits set")
            return value
        return self.buf[pos : pos + t.size]  # fixed bytes<N>; padding is checked by the re-encoding

    def tuple(self, t: _Type, base: int) -> tuple[Any, ...]:
        values, head = [], base
        for item in t.items:
            if item.dynamic:
                self.spend(WORD)
                offset = self.word(head)
                if offset > len(self.buf) - base:
                    raise AbiError("an offset points outside the arguments")
                values.append(self.read(item, base + offset))
            else:
                values.append(self.read(item, head))
            head += item.head
        return tuple(values)

    def array(self, item: _Type, pos: int) -> list[Any]:
        self.spend(WORD)
        n = self.word(pos)
        if n > MAX_ARRAY or n * item.head > len(self.buf) - pos - WORD:
            raise AbiError("an array length is larger than the data")
        return list(self.tuple(_Type("tuple", items=(item,) * n), pos + WORD))


def _encode(t: _Type, value: Any) -> bytes:
    kind = t.kind
    if kind == "tuple":
        return _encode_tuple(t.items, value)
    if kind == "array":
        return len(value).to_bytes(WORD, "big") + _encode_tuple((t.items[0],) * len(value), value)
    if kind == "bytes":
        data = _bytes_value(value, t)
        return len(data).to_bytes(WORD, "big") + data + bytes(-len(data) % WORD)
    if kind == "address":
        return bytes(12) + bytes.fromhex(value[2:])
    if kind == "fixed":
        return _bytes_value(value, t) + bytes(WORD - t.size)
    return int(value).to_bytes(WORD, "big")


def _bytes_value(value: object, t: _Type) -> bytes:
    if not isinstance(value, bytes):
        raise AbiError(f"a {t.kind} argument must be bytes, not {type(value).__name__}")
    return value


def _encode_tuple(items: tuple[_Type, ...], values: Any) -> bytes:
    heads, tails = [], []
    offset = sum(t.head for t in items)
    for t, v in zip(items, values):
        body = _encode(t, v)
        if t.dynamic:
            heads.append(offset.to_bytes(WORD, "big"))
            tails.append(body)
            offset += len(body)
        else:
            heads.append(body)
    return b"".join(heads + tails)


def decode_args(types: str, data: bytes) -> tuple[Any, ...]:
    """Values of `types` encoded in `data`; AbiError unless `data` is exactly their canonical encoding."""
    t = parse_types(types)
    if not t.dynamic:  # the common token calls: a fixed length, and every word's range is checked on read
        if len(data) != t.head:
            raise AbiError(f"the arguments are {len(data)} bytes, not the {t.head} their types take")
        values = _Reader(data).tuple(t, 0)
        if any(item.kind == "fixed" for item in t.items) and _encode_tuple(t.items, values) != data:
            raise AbiError("a bytes<N> argument has dirty padding")
        return values
    values = _Reader(data).tuple(t, 0)
    if _encode_tuple(t.items, values) != data:
        raise AbiError("the arguments are not in canonical ABI encoding (stray, padded or trailing bytes)")
    return values


def encode_args(types: str, values: tuple[Any, ...] | list[Any]) -> bytes:
    """The canonical encoding of `values` as `types` (the inverse of decode_args)."""
    return _encode_tuple(parse_types(types).items, values)
