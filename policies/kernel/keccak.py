"""Keccak-256, the hash Ethereum uses for addresses, selectors and transaction hashes (pycryptodome)."""

from __future__ import annotations

from Crypto.Hash import keccak as _keccak


def keccak256(data: bytes) -> bytes:
    return _keccak.new(data=data, digest_bits=256).digest()
