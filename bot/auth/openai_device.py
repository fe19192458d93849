"""OpenAI (ChatGPT account) login by device code, the way the Codex CLI does it.

Source: openai/codex codex-rs/login/src/device_code_auth.rs (`request_user_code`,
`poll_for_token`, `complete_device_code_login`) and auth/manager.rs (refresh). The real flow is NOT
RFC 8628:
  1. POST {issuer}/api/accounts/deviceauth/usercode  JSON {client_id}
     -> {device_auth_id, user_code, interval}  (interval arrives as a string of seconds)
  2. the user opens {issuer}/codex/device and types the user code
  3. POST {issuer}/api/accounts/deviceauth/token  JSON {device_auth_id, user_code}, every `interval`;
     403/404 mean "not yet"; 200 -> {authorization_code, code_challenge, code_verifier}
     (the server made the PKCE pair), Codex gives up after 15 minutes
  4. POST {issuer}/oauth/token, form-encoded authorization_code grant with that verifier and
     redirect_uri {issuer}/deviceauth/callback -> {id_token, access_token, refresh_token}
  Refresh: POST {issuer}/oauth/token JSON {client_id, grant_type: refresh_token, refresh_token}.
We follow that, and also honour RFC 8628 error codes on the poll (authorization_pending, slow_down
(+5 s), expired_token, access_denied) should the server send them.

Caveat: these are ChatGPT-account tokens. Codex sends them to the ChatGPT backend
(chatgpt.com/backend-api, with a `chatgpt-account-id` header), not to api.openai.com; the public
API does not accept them as an API key. Use an API key for api.openai.com.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError, field_validator

from bot.auth.errors import AuthUnavailable, LoginFailed
from bot.auth.pkce import s256, same_secret
from bot.auth.store import OAuthEntry
from bot.auth.transport import check_endpoint, post, refresh_grant, token_error, token_response

PROVIDER = "openai"
ISSUER = "https://auth.openai.com"
CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"  # the Codex CLI's public client (no secret)
MAX_WAIT = 15 * 60.0
DEFAULT_INTERVAL = 5.0
SLOW_DOWN_STEP = 5.0  # RFC 8628 section 3.5
DEFAULT_TOKEN_LIFETIME = 3600.0  # only if neither expires_in nor a JWT `exp` tells us


@dataclass(frozen=True)
class DeviceCode:
    verification_url: str
    user_code: str  # shown to the user; short-lived, but phishing bait, so shown only where asked
    device_auth_id: str = field(repr=False)
    interval: float
    deadline: float  # on the login's monotonic clock


class _UserCodeResponse(BaseModel):
    device_auth_id: str
    user_code: str
    interval: float = DEFAULT_INTERVAL
    expires_in: float | None = None

    @field_validator("interval", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value


class _CodeResponse(BaseModel):
    authorization_code: str
    code_challenge: str
    code_verifier: str


class _TokenResponse(BaseModel):
    access_token: str
    refresh_token: str | None = None
    id_token: str | None = None
    expires_in: float | None = None


def jwt_claims(token: str | None) -> dict[str, Any]:
    """Unverified JWT payload: used only for an expiry hint and an account label, never for trust."""
    try:
        payload = token.split(".")[1]  # type: ignore[union-attr]
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return data if isinstance(data, dict) else {}
    except (AttributeError, IndexError, ValueError):
        return {}


class OpenAIDeviceLogin:
    """Device-code login and token refresh against auth.openai.com (or a fake, via `issuer`)."""

    def __init__(
        self,
        *,
        issuer: str = ISSUER,
        client_id: str = CLIENT_ID,
        max_wait: float = MAX_WAIT,
        slow_down_step: float = SLOW_DOWN_STEP,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        timeout: float = 30.0,
    ) -> None:
        self.issuer = check_endpoint(issuer.rstrip("/"))
        self.client_id = client_id
        self.max_wait = max_wait
        self.slow_down_step = slow_down_step
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._timeout = timeout

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/oauth/token"

    async def request_code(self) -> DeviceCode:
        result = await post(
            f"{self.issuer}/api/accounts/deviceauth/usercode",
            {"client_id": self.client_id},
            timeout=self._timeout,
        )
        if result.status == 404:
            raise LoginFailed("device code login is not enabled on this OpenAI server; use --method api-key")
        if not result.ok:
            raise token_error(result, provider=PROVIDER, during="login", secrets=())
        body = dict(result.body) if isinstance(result.body, dict) else {}
        body.setdefault("user_code", body.get("usercode"))  # Codex accepts either spelling
        try:
            parsed = _UserCodeResponse.model_validate(body)
        except ValidationError:
            raise AuthUnavailable(f"{PROVIDER} sent an unexpected device code answer") from None
        wait = min(parsed.expires_in or self.max_wait, self.max_wait)
        return DeviceCode(
            verification_url=f"{self.issuer}/codex/device",
            user_code=parsed.user_code,
            device_auth_id=parsed.device_auth_id,
            interval=max(parsed.interval, 0.0),
            deadline=self._monotonic() + wait,
        )

    async def wait_for_tokens(self, code: DeviceCode) -> OAuthEntry:
        """Poll until the user approves (or denies, or the code expires), then redeem the code."""
        interval = code.interval
        while True:
            if self._monotonic() + interval >= code.deadline:
                raise self._expired()
            await self._sleep(interval)
            result = await post(
                f"{self.issuer}/api/accounts/deviceauth/token",
                {"device_auth_id": code.device_auth_id, "user_code": code.user_code},
                timeout=self._timeout,
            )
            if result.ok:
                return await self._redeem(result.body)
            error = result.error_code()
            if error == "slow_down" or result.status == 429:
                interval += self.slow_down_step
            elif error == "expired_token":
                raise self._expired()
            elif error == "access_denied":
                raise LoginFailed("the device login was denied in the browser; nothing was saved")
            elif error == "authorization_pending" or result.status in (403, 404):
                continue
            else:
                raise token_error(result, provider=PROVIDER, during="login", secrets=(code.device_auth_id,))

    def _expired(self) -> LoginFailed:
        return LoginFailed(
            "the device code expired before it was approved; "
            f"run `owlia auth setup --provider {PROVIDER}` again"
        )

    async def _redeem(self, body: Any) -> OAuthEntry:
        try:
            issued = _CodeResponse.model_validate(body)
        except ValidationError:
            raise AuthUnavailable(f"{PROVIDER} sent an unexpected device approval answer") from None
        if not same_secret(s256(issued.code_verifier), issued.code_challenge):
            raise LoginFailed(f"{PROVIDER} sent an inconsistent PKCE pair; run setup again")
        result = await post(
            self.token_url,
            {
                "grant_type": "authorization_code",
                "code": issued.authorization_code,
                "redirect_uri": f"{self.issuer}/deviceauth/callback",
                "client_id": self.client_id,
                "code_verifier": issued.code_verifier,
            },
            form=True,
            timeout=self._timeout,
        )
        if not result.ok:
            raise token_error(
                result,
                provider=PROVIDER,
                during="login",
                secrets=(issued.authorization_code, issued.code_verifier),
            )
        return self._entry(result.body, previous=None)

    async def refresh(self, refresh_token: str) -> OAuthEntry:
        body = await refresh_grant(
            self.token_url, self.client_id, refresh_token, provider=PROVIDER, timeout=self._timeout
        )
        return self._entry(body, previous=refresh_token)

    def _entry(self, body: Any, previous: str | None) -> OAuthEntry:
        parsed, refresh = token_response(_TokenResponse, body, previous=previous, provider=PROVIDER)
        now = self._clock()
        if parsed.expires_in is not None:
            expires_at = now + parsed.expires_in
        else:
            exp = jwt_claims(parsed.access_token).get("exp")
            expires_at = float(exp) if isinstance(exp, (int, float)) else now + DEFAULT_TOKEN_LIFETIME
        email = jwt_claims(parsed.id_token).get("email")
        return OAuthEntry(
            access_token=parsed.access_token,
            refresh_token=refresh,
            expires_at=expires_at,
            scopes=("openid", "profile", "email", "offline_access"),
            account=email if isinstance(email, str) else None,
        )
