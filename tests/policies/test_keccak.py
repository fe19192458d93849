"""Keccak-256 through pycryptodome's C functions directly (ctypes) agrees with its public API, and with
the published vectors (the empty string, an ERC-20 selector)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from policies.kernel import keccak
from policies.kernel.keccak import keccak256


def test_the_direct_path_is_the_one_in_use():
    # if this fails after a pycryptodome upgrade, keccak256 still works (public API), only slower and heavier
    keccak256(b"bind")
    assert keccak._impl is not keccak._public and keccak._impl is not keccak._bind


def test_hashing_loads_neither_cffi_nor_pycparser():
    """The direct path is ctypes on pycryptodome's library: cffi's run-time C parser (about 3 MB)
    stays out of every process that hashes (the signer, the bot, `owlia sign send`)."""
    probe = ("import sys; from policies.kernel.keccak import keccak256; keccak256(b'x'); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cffi', 'pycparser', 'Crypto')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    assert out.strip() == "[]"


def test_known_vectors():
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert keccak256(b"transfer(address,uint256)")[:4].hex() == "a9059cbb"


@given(st.binary(max_size=2000))
def test_the_direct_path_agrees_with_the_public_api(data):
    expected = keccak._public(data)
    assert keccak256(data) == expected
    assert keccak256(bytearray(data)) == expected
    assert keccak256(memoryview(data)) == expected
