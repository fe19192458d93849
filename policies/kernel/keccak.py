"""Keccak-256, the hash Ethereum uses for addresses, selectors and transaction hashes (pycryptodome's C code).

Two hashes per signature and one per checksummed address, so the C functions of pycryptodome's
`_keccak` library are called directly through ctypes, bound on the first hash, on reused states. pycryptodome's own
`Crypto.Hash.keccak` goes through cffi, whose declarations are parsed at run time by pycparser:
about 3 MB and 25 ms that every process hashing an address would carry, and twenty Python calls
per hash for the hash object. The direct call is as fast as cffi's. If the library is missing or
no longer has these functions, the public API is used; both give the same digest
(tests/policies/test_keccak.py).
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
from collections.abc import Callable
from pathlib import Path

_RATE_BYTES = 64  # keccak_init takes the capacity in bytes: 2 x 32 for Keccak-256
_ROUNDS = 24
_PADDING = 0x01  # original Keccak, not SHA-3 (0x06)


def _public(data: bytes) -> bytes:
    from Crypto.Hash import keccak  # lazy: 29 ms, 3924 KiB

    return keccak.new(data=data, digest_bits=256).digest()


def _library() -> ctypes.CDLL | None:
    """pycryptodome's `Crypto/Hash/_keccak` shared library, found the way pycryptodome finds it."""
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
        init, reset = lib.keccak_init, lib.keccak_reset
        absorb, squeeze = lib.keccak_absorb, lib.keccak_digest
    except AttributeError:
        return None
    # The prototypes as pycryptodome declares them (Crypto/Hash/keccak.py): init(void **, size_t,
    # uint8_t), reset(void *), absorb(void *, const uint8_t *, size_t), digest(void *, uint8_t *,
    # size_t, uint8_t). Only init gets `argtypes`: the three per-hash calls are handed ctypes objects
    # of exactly those types (and `bytes`, passed as its buffer), which skips the per-argument
    # conversion `argtypes` costs, a fifth of each call.
    init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint8]
    for function in (init, reset, absorb, squeeze):
        function.restype = ctypes.c_int
    size_t, digest_size, padding = ctypes.c_size_t, ctypes.c_size_t(32), ctypes.c_uint8(_PADDING)

    # Sponge states (with their output buffers) are reused, not made and freed per hash: three C
    # calls instead of four and no allocation. A hash takes one out of the pool and puts it back
    # when done; list.pop and list.append are atomic, so no two threads (nor a signal handler that
    # hashes) ever share one. The pool holds as many states as hashes ever ran at once (a few).
    pool: list[tuple[ctypes.c_void_p, ctypes.Array[ctypes.c_char]]] = []
    take, give = pool.pop, pool.append

    def fresh() -> tuple[ctypes.c_void_p, ctypes.Array[ctypes.c_char]]:
        state = ctypes.c_void_p()
        if init(ctypes.byref(state), _RATE_BYTES, _ROUNDS):
            raise ValueError("keccak_init failed")
        return state, ctypes.create_string_buffer(32)

    def keccak256(data: bytes) -> bytes:
        if type(data) is not bytes:
            data = bytes(data)
        try:
            state, out = take()
        except IndexError:
            state, out = fresh()
        # keccak_digest squeezes a copy of the state; the reset makes a reused state a fresh one.
        if (
            reset(state)
            or absorb(state, data, size_t(len(data)))
            or squeeze(state, out, digest_size, padding)
        ):
            raise ValueError("keccak failed")  # that state is dropped, not reused
        digest = out.raw
        give((state, out))
        return digest

    return keccak256


# Known answers: the empty string and "abc" (published Keccak-256 vectors), and a message longer than
# one 136-byte block (checked against a separate implementation of Keccak-f[1600]). A binding that
# gets any wrong is not used.
_KNOWN = (
    (b"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"),
    (b"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"),
    (b"a" * 200, "96ea54061def936c4be90b518992fdc6f12f535068a256229aca54267b4d084d"),
)


class KeccakMismatch(RuntimeError):
    """Neither binding of pycryptodome gives the known Keccak-256 answers: nothing may be hashed."""


def _answers_right(impl: Callable[[bytes], bytes]) -> bool:
    try:
        return all(impl(data).hex() == digest for data, digest in _KNOWN)
    except (ValueError, OSError):
        return False


def _bind(data: bytes) -> bytes:
    """The first hash: bind pycryptodome, check it against known answers, then every later call goes
    straight to the bound function. The direct binding calls private C functions whose prototypes
    are declared here by hand; a pycryptodome that changed them is caught here, not in a signature."""
    global _impl
    for candidate in (_direct(), _public):
        if candidate is not None and _answers_right(candidate):
            _impl = candidate
            return _impl(data)
    raise KeccakMismatch(
        "Keccak-256 from pycryptodome does not give the known answers; refusing to hash "
        "(reinstall the locked pycryptodome: `bash .ci/setup`)"
    )


_impl: Callable[[bytes], bytes] = _bind


def keccak256(data: bytes) -> bytes:
    return _impl(data)
