"""Short-lived bridge connection tokens (aud, exp, scope), issued after a signed device challenge.

A token only opens a WebSocket to this bridge: it carries no signing power, because the signer
verifies every answer's device signature itself. Tokens are HMAC-SHA256 under a key that lives
only in this process, so restarting the bridge voids them all; every use also re-checks that the
device is still paired, so a revoked device's tokens die at once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

SCOPE_COMPANION = "companion"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class Claims:
    device_id: str
    aud: str
    scope: str
    exp: float


class TokenIssuer:
    def __init__(self, audience: str, ttl_seconds: float = 300.0, clock=time.time) -> None:
        self.audience = audience
        self.ttl = ttl_seconds
        self.clock = clock
        self._key = secrets.token_bytes(32)

    def issue(self, device_id: str, scope: str = SCOPE_COMPANION) -> tuple[str, float]:
        exp = self.clock() + self.ttl
        body = _b64(
            json.dumps(
                {
                    "sub": device_id,
                    "aud": self.audience,
                    "scope": scope,
                    "exp": exp,
                    "jti": secrets.token_hex(8),
                },
                separators=(",", ":"),
            ).encode()
        )
        return f"{body}.{_b64(self._mac(body))}", exp

    def verify(self, token: str, scope: str = SCOPE_COMPANION) -> Claims | None:
        """Claims of a genuine, unexpired token for this audience and scope; None otherwise."""
        body, _, mac = token.partition(".")
        try:
            ok = hmac.compare_digest(_unb64(mac), self._mac(body))
            data = json.loads(_unb64(body)) if ok else None
        except (ValueError, TypeError):
            return None
        if not isinstance(data, dict):
            return None
        claims = Claims(
            str(data.get("sub")), str(data.get("aud")), str(data.get("scope")), float(data.get("exp", 0))
        )
        if claims.aud != self.audience or claims.scope != scope or self.clock() >= claims.exp:
            return None
        return claims

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._key, body.encode(), hashlib.sha256).digest()
