"""Keccak-256, the hash Ethereum uses for addresses, selectors and transaction hashes (pycryptodome).

pycryptodome is bound on the first hash, not on import: loading it loads cffi and pycparser (about
20 ms), which a command that only frames a request (`owlia sign send`) never needs.
"""

from __future__ import annotations

from typing import Any

_keccak: Any = None


def keccak256(data: bytes) -> bytes:
    global _keccak
    if _keccak is None:
        from Crypto.Hash import keccak as _keccak
    return _keccak.new(data=data, digest_bits=256).digest()
