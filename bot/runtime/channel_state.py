"""Each chat channel's life: connecting, up, or down and retrying, for /health and the doctor.

A channel that fails (a network error at start-up, a gateway that drops, a token the platform
refuses) is retried with capped exponential backoff for as long as the bot runs: a Telegram outage
at boot must not leave a bot that is up with no channel. What failed is kept as an exception type
only; messages carry URLs and sometimes tokens.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

log = logging.getLogger(__name__)

FIRST_DELAY = 1.0
MAX_DELAY = 60.0


class Channel(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...

    async def send_text(self, chat_id: str, text: str) -> None: ...


class Phase(str, Enum):
    CONNECTING = "connecting"
    UP = "up"
    DOWN = "down"


@dataclass
class ChannelState:
    phase: Phase = Phase.CONNECTING
    since: float = 0.0
    failures: int = 0  # in a row; reset once the channel is up again
    last_error: str = ""  # an exception type, never its message
    retry_at: float | None = None

    def describe(self, now: float) -> str:
        if self.phase is Phase.DOWN:
            wait = max(0, round((self.retry_at or now) - now))
            return f"down ({self.last_error}, {self.failures} failures in a row; retrying in {wait} s)"
        return self.phase.value


class ChannelStates:
    """The bot's channels by name. `healthy` means every configured channel is up."""

    def __init__(self) -> None:
        self.states: dict[str, ChannelState] = {}

    def healthy(self) -> bool:
        return all(s.phase is Phase.UP for s in self.states.values())

    def summary(self) -> str:
        now = time.monotonic()
        return (
            ", ".join(f"{name} {state.describe(now)}" for name, state in sorted(self.states.items()))
            or "none"
        )

    def down(self) -> list[str]:
        return sorted(name for name, s in self.states.items() if s.phase is not Phase.UP)

    async def keep(
        self, name: str, channel: Channel, stop: asyncio.Event, delay: Callable[[int], float] | None = None
    ) -> None:
        """Run `channel` until `stop`; whenever it fails or returns early, wait and run it again."""
        state = self.states.setdefault(name, ChannelState(since=time.monotonic()))
        backoff = delay or backoff_delay
        while not stop.is_set():
            state.phase, state.since, state.retry_at = Phase.CONNECTING, time.monotonic(), None
            watcher = asyncio.create_task(self._mark_up(state, channel))
            try:
                await channel.run(stop)
                if stop.is_set():
                    return
                error = "stopped by itself"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is retried, none ends the bot
                error = type(exc).__name__
                log.warning("the %s channel failed (%s); retrying", name, error)
            finally:
                watcher.cancel()
            state.failures += 1
            wait = backoff(state.failures)
            state.phase, state.last_error = Phase.DOWN, error
            state.since, state.retry_at = time.monotonic(), time.monotonic() + wait
            try:
                await asyncio.wait_for(stop.wait(), wait)
            except asyncio.TimeoutError:
                pass

    @staticmethod
    async def _mark_up(state: ChannelState, channel: Channel) -> None:
        ready = getattr(
            channel, "ready", None
        )  # channels that can tell (Telegram) say when they are connected
        if isinstance(ready, asyncio.Event):
            ready.clear()
            await ready.wait()
        state.phase, state.since, state.failures = Phase.UP, time.monotonic(), 0


def backoff_delay(failures: int) -> float:
    """1, 2, 4 … 60 s, with up to 20 % jitter so many bots do not retry in step."""
    base = min(MAX_DELAY, FIRST_DELAY * 2 ** max(0, failures - 1))
    return base * (1 + random.random() * 0.2)
