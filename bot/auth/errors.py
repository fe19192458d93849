"""Errors the auth layer raises. Every message is safe to show the user and to log.

Messages name the provider, the step and the fix; they never hold a token, an authorization code,
a PKCE verifier or a device id. Text a server sends back passes through `scrub` first, because an
error description can echo what we sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SETUP_HINT = "run `owlia auth setup --provider {provider}`"
# Long opaque runs look like credentials; a server description has no business holding one.
_SECRETLIKE = re.compile(r"[A-Za-z0-9_\-\.~+/=]{24,}")


class AuthError(Exception):
    """Base of the auth errors; `str(error)` is the user-facing message."""


class AuthStoreError(AuthError):
    """auth.json cannot be trusted: corrupt, from a newer version, or readable by others."""


class LoginFailed(AuthError):
    """`owlia auth setup` did not get tokens: wrong state, code rejected, denied or expired."""


class ReauthRequired(AuthError):
    """The stored login is no longer accepted (refresh token revoked, reused or expired)."""

    def __init__(self, provider: str, reason: str) -> None:
        hint = SETUP_HINT.format(provider=provider)
        super().__init__(f"{provider} login is no longer valid ({reason}): {hint}")
        self.provider = provider


class AuthUnavailable(AuthError):
    """A transient failure (network, timeout, 5xx, 429): trying again later may work."""


def scrub(text: str, secrets: Iterable[str | None] = (), limit: int = 160) -> str:
    """Make server-supplied text safe for a message: drop our secrets and anything key-like, cap length."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    text = _SECRETLIKE.sub("[redacted]", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
