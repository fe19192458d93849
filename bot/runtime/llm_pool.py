"""Turn configured profiles + stored credentials into a failover router, refreshed as tokens change.

Credentials are looked up per run (the resolver refreshes OAuth tokens 5 minutes before expiry),
and the router is rebuilt only when a credential actually changed, so connections are reused. A
profile without a credential is skipped, and said so in /status; none at all means "no LLM", which
the runtime answers with the `owlia auth setup` hint instead of failing.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config import LLMProfileSettings, LLMSettings
from bot.llm.cooldowns import CooldownStore
from bot.llm.models import resolve_model
from bot.llm.providers import make_profile, provider_module

if TYPE_CHECKING:  # the router and the request types under it load on first use: after ready
    from bot.llm.failover import FailoverRouter, Profile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Secret:
    kind: str  # "api_key" | "oauth"
    value: str

    def __repr__(self) -> str:
        return f"Secret({self.kind}, …)"


CredentialLookup = Callable[[str], Awaitable[Secret | None]]


def credential_name(profile: LLMProfileSettings) -> str:
    return profile.credential or resolve_model(profile.model).provider


class LLMPool:
    def __init__(self, settings: LLMSettings, lookup: CredentialLookup, cooldown_path: Path) -> None:
        self.settings = settings
        self.lookup = lookup
        self.cooldown_path = cooldown_path
        self._routers: dict[str | None, tuple[str, FailoverRouter]] = {}  # by preferred profile

    async def _credentials(self) -> list[tuple[LLMProfileSettings, Secret]]:
        """Each profile that has a credential now, in failover order."""
        found = []
        for item in self.settings.profiles:
            try:
                secret = await self.lookup(credential_name(item))
            except Exception as exc:  # noqa: BLE001 - one broken credential must not sink the others
                log.warning("LLM profile %s: %s", item.name, exc)
                continue
            if secret is not None:
                found.append((item, secret))
        return found

    async def configured(self) -> list[str]:
        """Profiles that have a credential, without building providers (which imports httpx)."""
        return [item.name for item, _ in await self._credentials()]

    async def warm(self) -> list[str]:
        """Import the provider adapters the credentialed profiles use (our wire-format modules; httpx
        under them is usually loaded already by the Telegram channel), in a worker thread, then build
        the default router (the process's TLS context is loaded with the first client, about 0.1 s), so the first reply
        after a start waits for neither; returns the modules imported.
        Never raises: a failure here only means the first message does this itself."""
        modules: list[str] = []
        try:
            for item, _ in await self._credentials():
                module = provider_module(resolve_model(item.model))
                if module not in modules:
                    await asyncio.to_thread(importlib.import_module, module)
                    modules.append(module)
            if modules:
                await self.router()  # cached: the first message reuses these providers
        except Exception:  # noqa: BLE001 - warming is an optimisation, never a reason to stop
            log.warning("could not prepare the LLM providers ahead", exc_info=True)
        return modules

    async def ready(self, now: float | None = None) -> list[str]:
        """Profiles with a credential and no cooldown, read from disk (no provider built, no request)."""
        store = CooldownStore(self.cooldown_path)
        moment = time.time() if now is None else now
        return [name for name in await self.configured() if store.get(name).until <= moment]

    async def router(self, profile: str | None = None) -> FailoverRouter | None:
        """The failover router; with `profile` (e.g. a cheaper model for heartbeats) that profile is
        tried first and the others stay behind it as failover. An unknown name is a ValueError."""
        if profile is not None and profile not in {p.name for p in self.settings.profiles}:
            raise ValueError(f"no LLM profile named {profile!r} in bot.llm.profiles")
        found = await self._credentials()
        if profile is not None:
            found.sort(key=lambda pair: pair[0].name != profile)  # stable: the rest keep their order
        if not found:
            self._routers.pop(profile, None)
            return None
        digest = hashlib.sha256()
        for item, secret in found:
            digest.update(f"{item.name}\0{secret.kind}\0{secret.value}\0".encode())
        fingerprint = digest.hexdigest()
        cached = self._routers.get(profile)
        if cached is None or cached[0] != fingerprint:  # providers hold TLS contexts: reuse
            from bot.llm.failover import FailoverRouter  # lazy: 9 ms, 316 KiB

            router = FailoverRouter([self._profile(i, s) for i, s in found], self.cooldown_path)
            cached = (fingerprint, router)
            self._routers[profile] = cached
        return cached[1]

    def _profile(self, item: LLMProfileSettings, secret: Secret) -> Profile:
        oauth = secret.kind == "oauth"
        return make_profile(
            item.name,
            item.model,
            api_key=None if oauth else secret.value,
            auth_token=secret.value if oauth else None,
            base_url=item.base_url,
            timeout=item.timeout,
        )

    async def describe(self) -> str:
        router = await self.router()
        names: Sequence[str] = [p.name for p in router.profiles] if router else []
        parts = []
        for item in self.settings.profiles:
            if item.name in names:
                until = router.cooling_until(item.name) if router else None
                state = cooling_text(until) if until else "ready"
            else:
                state = "no credential (run `owlia auth setup`)"
            parts.append(f"{item.name} = {item.model}: {state}")
        return "models: " + "; ".join(parts)


def cooling_text(until: float, now: float | None = None) -> str:
    """`cooling down for 42 s more (until 04:20 UTC)`: what a person reads, not an epoch."""
    left = max(0, round(until - (time.time() if now is None else now)))
    span = f"{left} s" if left < 120 else f"{left // 60} min"
    return f"cooling down for {span} more (until {time.strftime('%H:%M:%S', time.gmtime(until))} UTC)"
