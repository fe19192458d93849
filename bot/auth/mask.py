"""One way to show a secret: enough to recognise which key it is, never enough to use it."""

from __future__ import annotations

# Below this length the 10 revealed characters would be too large a share of the secret.
MIN_MASKED_LENGTH = 24


def mask(secret: str | None) -> str:
    """`sk-ant…AbCd` for long secrets, `…` otherwise (including empty or missing ones)."""
    if not secret or len(secret) < MIN_MASKED_LENGTH:
        return "…"
    return f"{secret[:6]}…{secret[-4:]}"
