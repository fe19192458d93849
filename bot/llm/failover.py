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

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from policies.kernel.files import write_private_file

from bot.llm.errors import AllProfilesUnavailable, ProfileFailed, ProviderError, StreamInterrupted
from bot.llm.types import (Completion, Finished, Request, StopReason, StreamEvent, TextDelta, ToolCall, ToolCallReady,
                           Usage)

log = logging.getLogger(__name__)

MAX_COOLDOWN = 3600.0


def cooldown_seconds(failures: int) -> float:
    """Cooldown after the `failures`-th consecutive failure: 1 min, 5 min, 25 min, then 1 h."""
    if failures < 1:
        return 0.0
    return float(min(MAX_COOLDOWN, 60 * 5 ** (failures - 1)))


class Provider(Protocol):
    def stream(self, request: Request) -> AsyncIterator[StreamEvent]: ...


@dataclass(frozen=True)
class Profile:
    name: str
    provider: Provider
    model: str


@dataclass
class _State:
    failures: int = 0
    until: float = 0.0


class CooldownStore:
    """Per-profile failure counts and cooldown deadlines (wall-clock seconds), on disk."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.states: dict[str, _State] = self._load()

    def _load(self) -> dict[str, _State]:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            log.warning("ignoring unreadable LLM cooldown file %s", self.path)
            return {}
        states: dict[str, _State] = {}
        for name, entry in (raw.get("profiles") or {}).items() if isinstance(raw, dict) else ():
            try:
                states[str(name)] = _State(int(entry["failures"]), float(entry["until"]))
            except (KeyError, TypeError, ValueError):
                continue
        return states

    def save(self) -> None:
        data = {"profiles": {n: {"failures": s.failures, "until": s.until} for n, s in self.states.items()}}
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private_file(self.path, json.dumps(data, indent=2, sort_keys=True).encode())

    def get(self, name: str) -> _State:
        return self.states.get(name, _State())

    def record_failure(self, name: str, now: float) -> float:
        state = self.states.setdefault(name, _State())
        state.failures += 1
        state.until = now + cooldown_seconds(state.failures)
        self.save()
        return state.until

    def record_success(self, name: str) -> None:
        if name in self.states:
            del self.states[name]
            self.save()


class FailoverRouter:
    """Streams a request through the first available profile, falling over on retryable errors."""

    def __init__(self, profiles: Sequence[Profile], cooldown_store: Path, *,
                 clock: Callable[[], float] = time.time) -> None:
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
                log.warning("LLM profile %s failed (%s); cooling down until %.0f", profile.name, exc.message, until)
                if emitted:
                    raise StreamInterrupted(profile.name, exc) from None
                errors.append(f"{profile.name}: {exc.message}")
        raise AllProfilesUnavailable("no LLM profile could answer: " + "; ".join(errors), soonest)

    async def complete(self, request: Request,
                       on_text: Callable[[str], Awaitable[None] | None] | None = None) -> Completion:
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
                return Completion("".join(text), tuple(calls), event.stop_reason, event.usage, event.model,
                                  event.profile, event.fallback_used)
        return Completion("".join(text), tuple(calls), StopReason.ERROR, Usage(), "")  # pragma: no cover
