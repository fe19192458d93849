"""Turn provider failures into two kinds the router acts on: retryable and fatal.

Retryable (rate limits, overloads, 5xx, timeouts, dropped connections) means "this profile, not
now": cool it down and try the next one. Fatal (bad request, bad key, no access, unknown model)
would fail the same way everywhere or needs the user to act, so it surfaces at once.

The HTTP client's exceptions hold the request, whose headers carry the API key. Our errors keep
only the status, the provider's error type and a scrubbed message, and are raised `from None` so a
logged traceback cannot reach the request either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 529})
RETRYABLE_ERROR_TYPES = frozenset(
    {"overloaded_error", "rate_limit_error", "api_error", "timeout_error", "server_error"}
)
# Things that look like credentials in provider messages (OpenAI echoes part of a bad key).
_KEYLIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|[A-Za-z0-9_\-]{32,})")


class LLMError(Exception):
    """Base for everything the LLM layer raises; messages are safe to show to the user."""


class ProviderError(LLMError):
    """One provider call failed. `retryable` tells the router whether another try may succeed."""

    def __init__(
        self, message: str, *, retryable: bool, status: int | None = None, error_type: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.error_type = error_type

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, retryable={self.retryable}, status={self.status})"


class ProfileFailed(LLMError):
    """A profile failed in a way another profile would not fix (bad key, bad request, ...)."""

    def __init__(self, profile: str, cause: ProviderError) -> None:
        self.profile = profile
        self.status = cause.status
        super().__init__(f"LLM profile {profile!r}: {cause.message}")


class AllProfilesUnavailable(LLMError):
    """Every profile is cooling down or just failed with a retryable error."""

    def __init__(self, message: str, retry_at: float | None) -> None:
        super().__init__(message)
        self.retry_at = retry_at


class StreamInterrupted(LLMError):
    """The answer broke off after text reached the user; we do not splice in another model."""

    def __init__(self, profile: str, cause: ProviderError) -> None:
        self.profile = profile
        super().__init__(
            f"LLM profile {profile!r} failed mid-answer ({cause.message}); "
            "the partial answer is incomplete, please ask again"
        )


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove known secrets and anything key-shaped from a provider's message."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


def _api_message(body: object) -> tuple[str | None, str | None]:
    """(error type, message) from an Anthropic `{"type":"error","error":{..}}` or OpenAI
    `{"error":{..}}` body."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            etype = inner.get("type") or inner.get("code")
            msg = inner.get("message")
            return (str(etype) if etype is not None else None, str(msg) if msg is not None else None)
    return None, None


def _status_text(status: int, error_type: str | None) -> tuple[str, bool]:
    if status == 401:
        return (
            "authentication failed (401): the API key or login token was rejected; check it or log in again",
            False,
        )
    if status == 403:
        return "permission denied (403): this key or account may not use this model or endpoint", False
    if status == 404:
        return "not found (404): check the model id and the endpoint URL", False
    if status == 400:
        return "the provider rejected the request as invalid (400)", False
    if status == 529 or error_type == "overloaded_error":
        return f"provider overloaded ({status})", True
    if status == 429:
        return "rate limited (429)", True
    if status >= 500:
        return f"provider server error ({status})", True
    if status in RETRYABLE_STATUS:
        return f"temporary provider error ({status})", True
    if error_type in RETRYABLE_ERROR_TYPES:
        return f"provider error ({error_type})", True
    return f"provider error ({status})", False


def classify(status: int, body: object, *, secrets: Iterable[str | None] = ()) -> ProviderError:
    """An HTTP error answer (status + parsed JSON body, or None) as a ProviderError carrying no secrets."""
    error_type, api_msg = _api_message(body)
    text, retryable = _status_text(status, error_type)
    if api_msg:
        text = f"{text}: {scrub(api_msg, secrets)[:300]}"
    return ProviderError(text, retryable=retryable, status=status, error_type=error_type)


def stream_error(body: object, *, secrets: Iterable[str | None] = ()) -> ProviderError:
    """An error event after the 200 header (Anthropic's `error` event, an OpenAI-compatible
    `{"error": ..}` chunk): a server-side failure, 529 when the provider says it is overloaded."""
    error_type, _ = _api_message(body)
    return classify(529 if error_type == "overloaded_error" else 500, body, secrets=secrets)
