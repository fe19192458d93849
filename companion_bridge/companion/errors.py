"""The companion's one error type, in a module of its own so the client's helpers can raise it too."""

from __future__ import annotations


class CompanionError(Exception):
    """Worded for the user. `code`: the bridge's or signer's error code, or an HTTP/close code."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
