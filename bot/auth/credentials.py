"""What the LLM layer asks for: a usable credential per provider, refreshed before it expires.

Order: the stored entry in auth.json, else the provider's API key environment variable. OAuth
access tokens are refreshed once they are within REFRESH_MARGIN of expiry, so a request never
starts with a token that dies mid-stream. Refresh tokens rotate, and a provider that sees a spent
one presented again revokes the login (RFC 9700 4.14.2), so a refresh token is spent at most once:
coroutines of one process share a refresh (an asyncio.Lock per provider), and processes (`owlia
start` next to `owlia chat`) take turns on auth.json's file lock, held from re-reading the entry
through the network call to storing the rotated one; the one that waited finds it fresh and uses it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from bot.auth.errors import AuthError, AuthUnavailable, ReauthRequired
from bot.auth.mask import mask
from bot.auth.store import ApiKeyEntry, AuthStore, OAuthEntry

log = logging.getLogger(__name__)

REFRESH_MARGIN = 5 * 60.0
ENV_KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def env_var_for(provider: str) -> str:
    """ANTHROPIC_API_KEY / OPENAI_API_KEY; `<NAME>_API_KEY` for any other provider name."""
    return ENV_KEYS.get(provider) or re.sub(r"[^A-Z0-9]", "_", provider.upper()) + "_API_KEY"


def needs_refresh(entry: OAuthEntry, now: float) -> bool:
    return now >= entry.expires_at - REFRESH_MARGIN


@dataclass(frozen=True)
class Credential:
    """`secret` is an API key (kind api_key) or an OAuth access token (kind oauth, sent as a bearer
    `auth_token`; Anthropic also needs `anthropic-beta: oauth-2025-04-20`). An OpenAI oauth secret is
    a ChatGPT-account token: api.openai.com does not take it as an API key (see openai_device.py)."""

    provider: str
    kind: Literal["api_key", "oauth"]
    secret: str

    def __repr__(self) -> str:
        return f"Credential(provider={self.provider!r}, kind={self.kind!r}, secret={mask(self.secret)!r})"

    __str__ = __repr__


class Refresher(Protocol):
    async def refresh(self, refresh_token: str) -> OAuthEntry: ...


def _default_anthropic() -> Refresher:
    from bot.auth.anthropic_oauth import AnthropicOAuth  # lazy: 17 ms, 3504 KiB

    return AnthropicOAuth()


def _default_openai() -> Refresher:
    from bot.auth.openai_device import OpenAIDeviceLogin  # lazy: 18 ms, 3516 KiB

    return OpenAIDeviceLogin()


class CredentialResolver:
    """`await resolver.get("anthropic")` -> Credential | None; raises AuthError when the user must act."""

    def __init__(
        self,
        store_path: Path,
        *,
        clock: Callable[[], float] = time.time,
        anthropic_client: Refresher | None = None,
        openai_client: Refresher | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._store = AuthStore(Path(store_path))
        self._clock = clock
        self._refreshers: dict[str, Refresher | None] = {
            "anthropic": anthropic_client,
            "openai": openai_client,
        }
        self._env = os.environ if env is None else env
        self._locks: dict[str, asyncio.Lock] = {}

    def _refresher(self, provider: str) -> Refresher | None:
        if self._refreshers.get(provider) is None:
            factory = {"anthropic": _default_anthropic, "openai": _default_openai}.get(provider)
            self._refreshers[provider] = factory() if factory else None
        return self._refreshers[provider]

    async def _load(self, provider: str) -> ApiKeyEntry | OAuthEntry | None:
        return await asyncio.to_thread(self._store.get, provider)

    async def get(self, provider: str) -> Credential | None:
        entry = await self._load(provider)
        if isinstance(entry, OAuthEntry) and needs_refresh(entry, self._clock()):
            lock = self._locks.setdefault(provider, asyncio.Lock())
            async with lock, self._store.locked_async():
                entry = await self._load(provider)  # someone holding the lock may have refreshed it
                if isinstance(entry, OAuthEntry) and needs_refresh(entry, self._clock()):
                    entry = await self._refresh(provider, entry)
        if isinstance(entry, ApiKeyEntry):
            return Credential(provider, "api_key", entry.key)
        if isinstance(entry, OAuthEntry):
            return Credential(provider, "oauth", entry.access_token)
        key = self._env.get(env_var_for(provider), "").strip()
        return Credential(provider, "api_key", key) if key else None

    async def _refresh(self, provider: str, entry: OAuthEntry) -> OAuthEntry | ApiKeyEntry | None:
        """Called holding auth.json's lock, with `entry` as stored: nobody else can rotate it meanwhile."""
        still_valid = self._clock() < entry.expires_at
        refresher = self._refresher(provider)
        if refresher is None:
            if still_valid:
                return entry
            raise ReauthRequired(provider, "the access token expired and cannot be refreshed here")
        try:
            fresh = await refresher.refresh(entry.refresh_token)
        except AuthUnavailable as exc:
            if still_valid:
                log.warning(
                    "%s token refresh failed (%s); using the current token until it expires", provider, exc
                )
                return entry
            raise AuthUnavailable(
                f"{provider} access token expired and could not be refreshed: {exc}"
            ) from None
        fresh = replace(fresh, account=fresh.account or entry.account, scopes=fresh.scopes or entry.scopes)
        await asyncio.to_thread(self._store.put_locked, provider, fresh)
        log.info(
            "%s access token refreshed (expires in %d s)", provider, int(fresh.expires_at - self._clock())
        )
        return fresh


__all__ = ["Credential", "CredentialResolver", "AuthError", "REFRESH_MARGIN", "env_var_for", "needs_refresh"]
