"""Bearer-token auth for the gateway and the token file it lives in.

Comparison is on SHA-256 digests with hmac.compare_digest, so timing reveals neither the token
nor its length. No configured token means every protected route answers 401: the gateway
fails closed rather than open. The token file is a secret like any key, hence 0600 in a 0700
directory, refused if anyone else can read it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

from policies.kernel.files import check_private_file, ensure_private_dir, write_private_file

MIN_TOKEN_LENGTH = 32


class BearerAuth:
    """`Authorization: Bearer <token>` matching the configured one."""

    def __init__(self, token: str | None) -> None:
        self._digest = hashlib.sha256(token.encode()).digest() if token else None

    def accepts(self, header: str | None) -> bool:
        if self._digest is None or not header:
            return False
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        digest = hashlib.sha256(presented.strip().encode("utf-8", "surrogateescape")).digest()
        return hmac.compare_digest(digest, self._digest)


def load_or_create_token(path: Path) -> str:
    """Read the gateway token, or create a fresh 32-byte urlsafe one (0600, parent 0700)."""
    path = Path(path)
    ensure_private_dir(path.parent)
    if not path.exists() and not path.is_symlink():
        write_private_file(path, (secrets.token_urlsafe(32) + "\n").encode())
    check_private_file(path)  # symlink, foreign owner or group/world bits: refuse
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < MIN_TOKEN_LENGTH:
        raise ValueError(f"gateway token in {path} is shorter than {MIN_TOKEN_LENGTH} characters")
    return token
