"""HMAC-SHA256 under one key that never changes, for the MACs written on every request.

`hmac.digest(key, msg, "sha256")` is one call, but with OpenSSL 3 each call looks the digest and
the MAC up again and hashes the key's two padded blocks again: 2-5 us here, of which hashing the
message is the smaller part. A request writes five such MACs (two audit records, the requests' and
the spends' digest terms, the anchor). `KeyedSha256` hashes the padded key blocks once (RFC 2104:
H((K ^ opad) || H((K ^ ipad) || m))) and copies those two states per message: the same bytes as
`hmac.digest`, which tests/signer/test_keyed_hash.py checks for any key and message.
"""

from __future__ import annotations

import hashlib

_BLOCK = 64  # SHA-256's block size: the key is padded (or, if longer, hashed and padded) to it
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


class KeyedSha256:
    """`digest(msg)` == `hmac.digest(key, msg, "sha256")`. Holds the key only as two hash states."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes | bytearray) -> None:
        block = (hashlib.sha256(key).digest() if len(key) > _BLOCK else bytes(key)).ljust(_BLOCK, b"\0")
        self._inner = hashlib.sha256(block.translate(_IPAD))
        self._outer = hashlib.sha256(block.translate(_OPAD))

    def digest(self, msg: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(msg)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def __repr__(self) -> str:
        return "KeyedSha256(<key>)"
