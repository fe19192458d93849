"""Keccak-256, the hash Ethereum uses for addresses, selectors and transaction hashes (pycryptodome).

pycryptodome is bound on the first hash, not on import: loading it loads cffi and pycparser (about
20 ms), which a command that only frames a request (`owlia sign send`) never needs.

Two hashes per signature and one per checksummed address: with pycryptodome's cffi backend the
C functions of its `_keccak` library are called directly, without the hash object its `new()`
builds (about twenty Python calls per hash). Any other backend, or a pycryptodome that no longer
has these functions, uses the public API. Both give the same digest (tests/policies/test_keccak.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_RATE_BYTES = 64  # keccak_init takes the capacity in bytes: 2 x 32 for Keccak-256
_ROUNDS = 24
_PADDING = 0x01  # original Keccak, not SHA-3 (0x06)


def _public(data: bytes) -> bytes:
    from Crypto.Hash import keccak

    return keccak.new(data=data, digest_bits=256).digest()


def _direct() -> Callable[[bytes], bytes] | None:
    try:
        from Crypto.Hash import keccak
        from Crypto.Util import _raw_api

        lib: Any = vars(keccak)["_raw_keccak_lib"]  # not in pycryptodome's type stubs
        ffi: Any = vars(_raw_api)["ffi"]
        init, absorb, squeeze, destroy = lib.keccak_init, lib.keccak_absorb, lib.keccak_digest, lib.keccak_destroy
    except (KeyError, AttributeError):
        return None
    if _raw_api.backend != "cffi":
        return None
    new, buffer = ffi.new, ffi.buffer

    def keccak256(data: bytes) -> bytes:
        if type(data) is not bytes:
            data = bytes(data)
        holder = new("void *[1]")
        if init(holder, _RATE_BYTES, _ROUNDS):
            raise ValueError("keccak_init failed")
        state = holder[0]
        try:
            out = new("uint8_t[32]")
            if absorb(state, data, len(data)) or squeeze(state, out, 32, _PADDING):
                raise ValueError("keccak failed")
            return buffer(out)[:]
        finally:
            destroy(state)

    return keccak256


def _bind(data: bytes) -> bytes:
    """The first hash: bind pycryptodome, then every later call goes straight to the bound function."""
    global _impl
    _impl = _direct() or _public
    return _impl(data)


_impl: Callable[[bytes], bytes] = _bind


def keccak256(data: bytes) -> bytes:
    return _impl(data)
