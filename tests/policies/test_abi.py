"""The strict ABI reader against eth_abi: the same values for canonical input, and nothing else accepted."""

from __future__ import annotations

import pytest
from eth_abi import decode as eth_decode, encode as eth_encode
from hypothesis import given, settings, strategies as st

from policies.abi import AbiError, decode_args, encode_args

addresses = st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())
uint256 = st.integers(0, 2**256 - 1)
blobs = st.binary(max_size=80)
calls = st.tuples(addresses, uint256, blobs)

CASES = [
    ("address,uint256", st.tuples(addresses, uint256)),
    ("bytes[]", st.tuples(st.lists(blobs, max_size=4))),
    ("uint256,bytes[]", st.tuples(uint256, st.lists(blobs, max_size=4))),
    ("(address,uint256,bytes)[]", st.tuples(st.lists(calls, max_size=4))),
    ("bool,(address,bytes)[]", st.tuples(st.booleans(), st.lists(st.tuples(addresses, blobs), max_size=3))),
    (
        "bytes[],bytes32[],bytes[]",
        st.tuples(
            st.lists(blobs, max_size=2),
            st.lists(st.binary(min_size=32, max_size=32), max_size=2),
            st.lists(blobs, max_size=2),
        ),
    ),
    (
        "address,address,uint160,uint48",
        st.tuples(addresses, addresses, st.integers(0, 2**160 - 1), st.integers(0, 2**48 - 1)),
    ),
]


def _split(types: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(types):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(types[start:i])
            start = i + 1
    return out + [types[start:]]


def _norm(value):
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    return value.lower() if isinstance(value, str) else value


@pytest.mark.parametrize("types, strategy", CASES, ids=[c[0] for c in CASES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_canonical_encodings_read_back_as_eth_abi_reads_them(types, strategy, data):
    values = data.draw(strategy)
    encoded = eth_encode(_split(types), list(values))
    assert encode_args(types, values) == encoded
    assert _norm(decode_args(types, encoded)) == _norm(eth_decode(_split(types), encoded))


@pytest.mark.parametrize("types, strategy", CASES, ids=[c[0] for c in CASES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_change_of_length_or_a_byte_is_refused_or_read_faithfully(types, strategy, data):
    """Whatever is accepted is exactly the canonical encoding of what was read."""
    encoded = eth_encode(_split(types), list(data.draw(strategy)))
    mutated = bytearray(encoded)
    if mutated and data.draw(st.booleans()):
        mutated[data.draw(st.integers(0, len(mutated) - 1))] ^= data.draw(st.integers(1, 255))
    else:
        mutated += data.draw(st.binary(min_size=1, max_size=40))
    try:
        values = decode_args(types, bytes(mutated))
    except AbiError:
        return
    assert encode_args(types, values) == bytes(mutated)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([c[0] for c in CASES]), st.binary(max_size=400))
def test_garbage_raises_only_abi_errors(types, garbage):
    try:
        decode_args(types, garbage)
    except AbiError:
        pass
