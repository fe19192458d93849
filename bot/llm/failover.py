"""Profile failover with persisted cooldowns.

A profile is one credential + model at one provider. When a profile hits a retryable failure it
cools down for min(3600, 60 * 5**(n-1)) seconds (n = its consecutive failures) and the next
profile is tried. Cooldowns live in a 0600 JSON file written atomically, so a restart does not
hammer a provider that just rate-limited us. A success resets the profile's count.

Two rules keep answers honest: a fatal error (bad key, bad request) stops at once rather than
quietly moving the user's data to another vendor, and once any output reached the user we never
splice another model's continuation onto it (StreamInterrupted instead).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from bot.llm.cooldowns import MAX_COOLDOWN, CooldownStore, cooldown_seconds  # noqa: F401 - re-exported
from bot.llm.errors import AllProfilesUnavailable, ProfileFailed, ProviderError, StreamInterrupted
from bot.llm.types import (
    Completion,
    Finished,
    Request,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallReady,
    Usage,
)

log = logging.getLogger(__name__)


class Provider(Protocol):
    def stream(self, request: Request) -> AsyncIterator[StreamEvent]: ...


@dataclass(frozen=True)
class Profile:
    name: str
    provider: Provider
    model: str


class FailoverRouter:
    """Streams a request through the first available profile, falling over on retryable errors."""

    def __init__(
        self, profiles: Sequence[Profile], cooldown_store: Path, *, clock: Callable[[], float] = time.time
    ) -> None:
        if not profiles:
            raise ValueError("at least one LLM profile is needed")
        names = [p.name for p in profiles]
        if len(set(names)) != len(names):
            raise ValueError("LLM profile names must be unique")
        self.profiles = tuple(profiles)
        self.store = CooldownStore(cooldown_store)
        self.clock = clock

    def cooling_until(self, name: str) -> float | None:
        """When `name`'s cooldown ends, or None if it is available now."""
        until = self.store.get(name).until
        return until if until > self.clock() else None

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Yield the events of the first profile that answers; the Finished event names it."""
        errors: list[str] = []
        soonest: float | None = None
        for position, profile in enumerate(self.profiles):
            now = self.clock()
            until = self.store.get(profile.name).until
            if until > now:
                errors.append(f"{profile.name}: cooling down for {int(until - now)}s")
                soonest = until if soonest is None else min(soonest, until)
                continue
            emitted = False
            try:
                async for event in profile.provider.stream(replace(request, model=profile.model)):
                    if isinstance(event, Finished):
                        self.store.record_success(profile.name)
                        event = replace(event, profile=profile.name, fallback_used=position > 0)
                    else:
                        emitted = True
                    yield event
                return
            except ProviderError as exc:
                if not exc.retryable:
                    raise ProfileFailed(profile.name, exc) from None
                until = self.store.record_failure(profile.name, self.clock())
                soonest = until if soonest is None else min(soonest, until)
                log.warning(
                    "LLM profile %s failed (%s); cooling down until %.0f", profile.name, exc.message, until
                )
                if emitted:
                    raise StreamInterrupted(profile.name, exc) from None
                errors.append(f"{profile.name}: {exc.message}")
        raise AllProfilesUnavailable("no LLM profile could answer: " + "; ".join(errors), soonest)

    async def complete(
        self, request: Request, on_text: Callable[[str], Awaitable[None] | None] | None = None
    ) -> Completion:
        """Run `stream` to the end and aggregate; `on_text` sees each text delta as it arrives."""
        text: list[str] = []
        calls: list[ToolCall] = []
        async for event in self.stream(request):
            if isinstance(event, TextDelta):
                text.append(event.text)
                if on_text is not None:
                    result = on_text(event.text)
                    if result is not None:
                        await result
            elif isinstance(event, ToolCallReady):
                calls.append(event.call)
            elif isinstance(event, Finished):
                return Completion(
                    "".join(text),
                    tuple(calls),
                    event.stop_reason,
                    event.usage,
                    event.model,
                    event.profile,
                    event.fallback_used,
                )
        return Completion("".join(text), tuple(calls), StopReason.ERROR, Usage(), "")  # pragma: no cover
