"""Keccak-256, the hash Ethereum uses for addresses, selectors and transaction hashes (pycryptodome's C code).

Two hashes per signature and one per checksummed address, so the C functions of pycryptodome's
`_keccak` library are called directly through ctypes, bound on the first hash. pycryptodome's own
`Crypto.Hash.keccak` goes through cffi, whose declarations are parsed at run time by pycparser:
about 3 MB and 25 ms that every process hashing an address would carry, and twenty Python calls
per hash for the hash object. The direct call is as fast as cffi's. If the library is missing or
no longer has these functions, the public API is used; both give the same digest
(tests/policies/test_keccak.py).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

_RATE_BYTES = 64  # keccak_init takes the capacity in bytes: 2 x 32 for Keccak-256
_ROUNDS = 24
_PADDING = 0x01  # original Keccak, not SHA-3 (0x06)


def _public(data: bytes) -> bytes:
    from Crypto.Hash import keccak

    return keccak.new(data=data, digest_bits=256).digest()


def _library() -> ctypes.CDLL | None:
    """pycryptodome's `Crypto/Hash/_keccak` shared library, found the way pycryptodome finds it."""
    import importlib.machinery
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("Crypto")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "Hash"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if (folder / f"_keccak{suffix}").is_file():
            try:
                return ctypes.CDLL(str(folder / f"_keccak{suffix}"))
            except OSError:
                return None
    return None


def _direct() -> Callable[[bytes], bytes] | None:
    lib = _library()
    if lib is None:
        return None
    try:
        init, absorb, squeeze, destroy = lib.keccak_init, lib.keccak_absorb, lib.keccak_digest, lib.keccak_destroy
    except AttributeError:
        return None
    # The prototypes as pycryptodome declares them (Crypto/Hash/keccak.py).
    init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint8]
    absorb.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    squeeze.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint8]
    destroy.argtypes = [ctypes.c_void_p]
    for function in (init, absorb, squeeze, destroy):
        function.restype = ctypes.c_int
    state_type, byref, buffer = ctypes.c_void_p, ctypes.byref, ctypes.create_string_buffer

    def keccak256(data: bytes) -> bytes:
        if type(data) is not bytes:
            data = bytes(data)
        state = state_type()
        if init(byref(state), _RATE_BYTES, _ROUNDS):
            raise ValueError("keccak_init failed")
        try:
            out = buffer(32)
            if absorb(state, data, len(data)) or squeeze(state, out, 32, _PADDING):
                raise ValueError("keccak failed")
            return out.raw
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
