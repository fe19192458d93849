"""RuntimeEvents: an in-memory ring of what the bot did, for the gateway's /events/poll.

Events are for operators, so they carry names, ids, tiers, outcomes and timings, never message
text or tool arguments in full; everything is passed through the secret redactor on the way in.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.security.redact import redact_obj

EVENT_TYPES: tuple[str, ...] = ("agent", "tool", "cron", "health", "channel", "signer")
DEFAULT_CAPACITY = 1_000
"""Events kept for /events/poll. A message emits about four, so this is the last ~250 messages:
pollers follow with `since` and are never that far behind. At 10 000 the ring was the largest thing
a long-running bot grew (about 2 MB, still filling after 2 000 messages)."""


@dataclass(frozen=True)
class RuntimeEvent:
    seq: int
    ts: float
    type: str
    name: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "ts": self.ts, "type": self.type, "name": self.name, "data": dict(self.data)}


class EventBus:
    """Thread-safe bounded event log with monotonically increasing sequence numbers."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._events: deque[RuntimeEvent] = deque(maxlen=capacity)
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        # Long-poll waiters: each is woken on its own loop, since emit may run on any thread.
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def emit(self, type: str, name: str, data: Mapping[str, Any] | None = None) -> RuntimeEvent:
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type!r}")
        with self._lock:
            event = RuntimeEvent(next(self._seq), time.time(), type, name, redact_obj(dict(data or {})))
            self._events.append(event)
            waiters = list(self._waiters)
        for loop, flag in waiters:
            try:
                loop.call_soon_threadsafe(flag.set)
            except RuntimeError:  # that loop is closed; its waiter is gone with it
                pass
        return event

    def poll(self, since: int = 0, limit: int = 100, type: str | None = None) -> list[RuntimeEvent]:
        """Events with seq > since, oldest first, at most `limit`, optionally of one type."""
        with self._lock:
            snapshot = list(self._events)
        out = [e for e in snapshot if e.seq > since and (type is None or e.type == type)]
        return out[: max(0, limit)]

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._events[-1].seq if self._events else 0

    async def wait(self, since: int, timeout: float) -> None:
        """Return once an event with seq > since exists, or after `timeout` seconds.

        For long-polling: the caller re-polls afterwards, so waking early is harmless but
        sleeping through an event is not; the check and the registration share the lock.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        while True:
            flag = asyncio.Event()
            waiter = (loop, flag)
            with self._lock:
                if self._events and self._events[-1].seq > since:
                    return
                self._waiters.add(waiter)
            try:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return
                try:
                    await asyncio.wait_for(flag.wait(), remaining)
                except asyncio.TimeoutError:
                    return
            finally:
                with self._lock:
                    self._waiters.discard(waiter)
