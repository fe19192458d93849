"""The one HTTP call the OAuth flows need: POST a JSON or form body, get a status and a JSON body.

stdlib `urllib` run in a worker thread keeps the auth layer free of extra dependencies. Tokens
must not travel in clear text, so endpoints are https, with plain http allowed only on loopback
(the local fake server in tests). Redirects are refused: a token endpoint has no reason to send us
elsewhere, and following one would replay the body to a host we did not choose.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.auth.errors import AuthError, AuthUnavailable, LoginFailed, ReauthRequired, scrub
from policies.kernel import safejson

_M = TypeVar("_M", bound=BaseModel)

USER_AGENT = "owliabot-auth/0.1"
MAX_BODY = 1 << 20
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
TRANSIENT_STATUS = frozenset({408, 425, 429})


def check_endpoint(url: str) -> str:
    """Refuse an endpoint that would send secrets in clear text; return it unchanged otherwise."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return url
    raise ValueError(f"OAuth endpoint must be https (or http on loopback): {parts.scheme}://{parts.hostname}")


@dataclass(frozen=True)
class HttpResult:
    status: int
    body: Any  # parsed JSON, or None when the body was empty or not JSON

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def error_code(self) -> str | None:
        """OAuth `{"error": "x"}` or OpenAI-style `{"error": {"code": "x"}}`."""
        if not isinstance(self.body, dict):
            return None
        error = self.body.get("error")
        if isinstance(error, str):
            return error
        if isinstance(error, dict):
            code = error.get("code") or error.get("type")
            return code if isinstance(code, str) else None
        code = self.body.get("code")
        return code if isinstance(code, str) else None

    def error_description(self) -> str:
        if not isinstance(self.body, dict):
            return ""
        desc = self.body.get("error_description")
        if desc is None and isinstance(self.body.get("error"), dict):
            desc = self.body["error"].get("message")
        return desc if isinstance(desc, str) else ""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - stdlib signature
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _parse(raw: bytes) -> Any:
    try:
        return safejson.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        return None


def _post_sync(url: str, body: dict[str, str], form: bool, timeout: float) -> HttpResult:
    if form:
        data, ctype = urllib.parse.urlencode(body).encode(), "application/x-www-form-urlencoded"
    else:
        data, ctype = json.dumps(body).encode(), "application/json"
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Content-Type": ctype, "Accept": "application/json", "User-Agent": USER_AGENT},
    )
    host = urllib.parse.urlsplit(url).hostname
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return HttpResult(response.status, _parse(response.read(MAX_BODY)))
    except urllib.error.HTTPError as exc:
        with exc:
            return HttpResult(exc.code, _parse(exc.read(MAX_BODY)))
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AuthUnavailable(f"cannot reach {host}: {type(reason).__name__}") from None


async def post(url: str, body: dict[str, str], *, form: bool = False, timeout: float = 30.0) -> HttpResult:
    """POST `body` (JSON, or form-encoded if `form`); network failures raise AuthUnavailable."""
    return await asyncio.to_thread(_post_sync, url, body, form, timeout)


def token_error(
    result: HttpResult, *, provider: str, during: str, secrets: tuple[str | None, ...]
) -> AuthError:
    """Map a failed token-endpoint answer to the error the caller should raise.

    `during` is "login" or "refresh": a rejected grant at login means "try setup again", at refresh
    it means the stored login is dead (ReauthRequired); 5xx/429 are transient either way.
    """
    code = result.error_code() or f"HTTP {result.status}"
    desc = scrub(result.error_description(), secrets)
    detail = f"{code}: {desc}" if desc else code
    if result.status >= 500 or result.status in TRANSIENT_STATUS:
        return AuthUnavailable(f"{provider} token endpoint is unavailable ({detail}); try again shortly")
    if during == "refresh":
        return ReauthRequired(provider, f"token refresh rejected, {detail}")
    return LoginFailed(
        f"{provider} rejected the login ({detail}). Authorization codes are single-use and "
        f"short-lived: run `owlia auth setup --provider {provider}` again"
    )


async def refresh_grant(
    token_url: str, client_id: str, refresh_token: str, *, provider: str, timeout: float
) -> Any:
    """The OAuth refresh_token grant both providers use; returns the token response body."""
    result = await post(
        token_url,
        {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id},
        timeout=timeout,
    )
    if not result.ok:
        raise token_error(result, provider=provider, during="refresh", secrets=(refresh_token,))
    return result.body


def token_response(model: type[_M], body: Any, *, previous: str | None, provider: str) -> tuple[_M, str]:
    """Validate a token endpoint's answer; returns it with the refresh token to keep (the new one if
    the server rotated it, else `previous`). No refresh token at all is an error."""
    try:
        parsed = model.model_validate(body)
    except ValidationError:
        raise AuthUnavailable(f"{provider} token endpoint sent an unexpected answer") from None
    refresh = getattr(parsed, "refresh_token", None) or previous
    if not refresh:
        raise AuthUnavailable(f"{provider} token endpoint sent no refresh token")
    return parsed, refresh
