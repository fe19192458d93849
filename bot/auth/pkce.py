"""PKCE (RFC 7636, S256 only) and the OAuth `state`: random values and their constant-time checks.

The verifier never leaves this machine except in the token request, so a code intercepted on its
way back through the browser or the clipboard is useless to whoever took it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def s256(verifier: str) -> str:
    """The S256 code challenge for `verifier`."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


@dataclass(frozen=True)
class Pkce:
    verifier: str = field(repr=False)
    challenge: str


def new_pkce() -> Pkce:
    """32 random bytes -> a 43-character verifier (the RFC's recommended size)."""
    verifier = b64url(secrets.token_bytes(32))
    return Pkce(verifier=verifier, challenge=s256(verifier))


def new_state() -> str:
    """A fresh, unguessable `state`; deliberately not the verifier (some clients reuse it, we don't)."""
    return b64url(secrets.token_bytes(24))


def same_secret(a: str, b: str) -> bool:
    """Constant-time equality for state values, challenges and tokens."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
