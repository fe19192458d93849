"""Keccak-256 through pycryptodome's C functions directly agrees with its public API, and with
the published vectors (the empty string, an ERC-20 selector)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from policies.kernel import keccak
from policies.kernel.keccak import keccak256


def test_the_direct_path_is_the_one_in_use():
    # pycryptodome here uses cffi: if this fails after an upgrade, keccak256 still works (public API), only slower
    assert keccak256 is not keccak._public


def test_known_vectors():
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert keccak256(b"transfer(address,uint256)")[:4].hex() == "a9059cbb"


@given(st.binary(max_size=2000))
def test_the_direct_path_agrees_with_the_public_api(data):
    expected = keccak._public(data)
    assert keccak256(data) == expected
    assert keccak256(bytearray(data)) == expected
    assert keccak256(memoryview(data)) == expected
