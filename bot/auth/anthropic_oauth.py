"""Anthropic (Claude Pro/Max) login: OAuth 2.0 authorization code + PKCE, code pasted back by hand.

The values are those of Claude Code's public client, as used by sst/opencode-anthropic-auth
(index.mjs: `authorize`, `exchange`, and the refresh in `loader.fetch`) and documented in
notforyou23/evobrew anthropic-oauth-flow.md: authorize at claude.ai with `code=true` (the consent
page then *shows* `CODE#STATE` instead of redirecting, since a self-hosted bot has no callback
URL), redirect_uri console.anthropic.com/oauth/code/callback, and JSON bodies to the token
endpoint for both the code exchange (which also carries `state`) and the refresh.

Requests using the access token need `Authorization: Bearer` plus `anthropic-beta:
oauth-2025-04-20` (OAUTH_BETA_HEADER; same sources) instead of `x-api-key`.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel

from bot.auth.errors import LoginFailed
from bot.auth.pkce import new_pkce, new_state, same_secret
from bot.auth.store import OAuthEntry
from bot.auth.transport import check_endpoint, post, refresh_grant, token_error, token_response

PROVIDER = "anthropic"
AUTHORIZE_URL = "https://claude.ai/oauth/authorize"
TOKEN_URL = "https://console.anthropic.com/v1/oauth/token"
CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"  # Claude Code's public client (no secret)
REDIRECT_URI = "https://console.anthropic.com/oauth/code/callback"
SCOPES = ("org:create_api_key", "user:profile", "user:inference")
OAUTH_BETA_HEADER = "oauth-2025-04-20"


@dataclass(frozen=True)
class AuthorizationRequest:
    """One login attempt: the URL to open, and the secrets to check and redeem what comes back."""

    url: str
    state: str = field(repr=False)
    verifier: str = field(repr=False)


class _Account(BaseModel):
    email_address: str | None = None
    email: str | None = None


class _TokenResponse(BaseModel):
    access_token: str
    refresh_token: str | None = None
    expires_in: float
    scope: str | None = None
    account: _Account | None = None


def parse_pasted(pasted: str) -> tuple[str, str]:
    """`CODE#STATE` as shown by the consent page (or the full callback URL) -> (code, state)."""
    text = pasted.strip()
    if "?" in text and "code=" in text:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(text).query)
        code, state = query.get("code", [""])[0], query.get("state", [""])[0]
    else:
        code, _, state = text.partition("#")
    code, state = code.strip(), state.strip()
    if not code or not state:
        raise LoginFailed("that is not the value the consent page shows: paste the whole CODE#STATE string")
    return code, state


class AnthropicOAuth:
    """Builds the authorization URL, redeems the pasted code, refreshes tokens.

    Endpoints are constructor arguments so tests can point them at a local fake server.
    """

    def __init__(
        self,
        *,
        authorize_url: str = AUTHORIZE_URL,
        token_url: str = TOKEN_URL,
        client_id: str = CLIENT_ID,
        redirect_uri: str = REDIRECT_URI,
        scopes: tuple[str, ...] = SCOPES,
        clock: Callable[[], float] = time.time,
        timeout: float = 30.0,
    ) -> None:
        self.authorize_url = check_endpoint(authorize_url)
        self.token_url = check_endpoint(token_url)
        self.client_id = client_id
        self.redirect_uri = redirect_uri
        self.scopes = scopes
        self._clock = clock
        self._timeout = timeout

    def start(self) -> AuthorizationRequest:
        pkce, state = new_pkce(), new_state()
        query = urllib.parse.urlencode(
            {
                "code": "true",
                "client_id": self.client_id,
                "response_type": "code",
                "redirect_uri": self.redirect_uri,
                "scope": " ".join(self.scopes),
                "code_challenge": pkce.challenge,
                "code_challenge_method": "S256",
                "state": state,
            }
        )
        return AuthorizationRequest(url=f"{self.authorize_url}?{query}", state=state, verifier=pkce.verifier)

    async def exchange(self, request: AuthorizationRequest, pasted: str) -> OAuthEntry:
        """Check the pasted state (before any network call), then trade the code for tokens."""
        code, state = parse_pasted(pasted)
        if not same_secret(state, request.state):
            raise LoginFailed(
                "the pasted code belongs to a different login attempt (state mismatch); "
                f"run `owlia auth setup --provider {PROVIDER}` again and use the new URL"
            )
        result = await post(
            self.token_url,
            {
                "grant_type": "authorization_code",
                "code": code,
                "state": state,
                "client_id": self.client_id,
                "redirect_uri": self.redirect_uri,
                "code_verifier": request.verifier,
            },
            timeout=self._timeout,
        )
        if not result.ok:
            raise token_error(
                result, provider=PROVIDER, during="login", secrets=(code, state, request.verifier)
            )
        return self._entry(result.body, previous=None)

    async def refresh(self, refresh_token: str) -> OAuthEntry:
        """New access token; the refresh token rotates when the server sends a new one."""
        body = await refresh_grant(
            self.token_url, self.client_id, refresh_token, provider=PROVIDER, timeout=self._timeout
        )
        return self._entry(body, previous=refresh_token)

    def _entry(self, body: object, previous: str | None) -> OAuthEntry:
        parsed, refresh = token_response(_TokenResponse, body, previous=previous, provider=PROVIDER)
        account = (parsed.account.email_address or parsed.account.email) if parsed.account else None
        scopes = tuple(parsed.scope.split()) if parsed.scope else self.scopes
        return OAuthEntry(
            access_token=parsed.access_token,
            refresh_token=refresh,
            expires_at=self._clock() + parsed.expires_in,
            scopes=scopes,
            account=account,
        )
