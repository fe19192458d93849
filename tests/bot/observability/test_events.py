"""EventBus: the existing emit/poll behaviour and the long-poll waiter."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from bot.observability.events import DEFAULT_CAPACITY, EventBus


def test_emit_and_poll_filters_by_since_limit_and_type() -> None:
    bus = EventBus()
    bus.emit("agent", "run.start", {"run": 1})
    bus.emit("tool", "call", {"tool": "balance"})
    bus.emit("agent", "run.end", {"run": 1})
    assert bus.last_seq == 3
    assert [e.seq for e in bus.poll()] == [1, 2, 3]
    assert [e.seq for e in bus.poll(since=1)] == [2, 3]
    assert [e.seq for e in bus.poll(limit=2)] == [1, 2]
    assert [e.name for e in bus.poll(type="agent")] == ["run.start", "run.end"]
    assert bus.poll(since=3) == []
    with pytest.raises(ValueError):
        bus.emit("nope", "x")


def test_capacity_keeps_newest_and_sequence_keeps_growing() -> None:
    bus = EventBus(capacity=2)
    for i in range(5):
        bus.emit("cron", f"job{i}")
    assert [e.seq for e in bus.poll()] == [4, 5]
    assert bus.last_seq == 5


def test_wait_returns_at_once_when_an_event_is_already_there() -> None:
    bus = EventBus()
    bus.emit("health", "tick")

    async def main() -> float:
        start = time.monotonic()
        await bus.wait(0, 5)
        return time.monotonic() - start

    assert asyncio.run(main()) < 0.5


def test_wait_times_out_without_events() -> None:
    bus = EventBus()

    async def main() -> float:
        start = time.monotonic()
        await bus.wait(0, 0.3)
        return time.monotonic() - start

    assert 0.25 <= asyncio.run(main()) < 2
    assert not bus._waiters  # nothing left registered


def test_wait_is_woken_by_emit_from_another_thread() -> None:
    bus = EventBus()

    async def main() -> float:
        timer = threading.Timer(0.2, bus.emit, args=("tool", "call"))
        start = time.monotonic()
        timer.start()
        await bus.wait(0, 10)
        timer.join()
        return time.monotonic() - start

    assert asyncio.run(main()) < 2
    assert not bus._waiters


def test_wait_ignores_events_at_or_below_since() -> None:
    bus = EventBus()

    async def main() -> float:
        # since=2 is ahead of the bus: the first emit (seq 1) must not end the wait, seq 3 must.
        threads = [threading.Timer(delay, bus.emit, args=("cron", "job")) for delay in (0.1, 0.2, 0.3)]
        start = time.monotonic()
        for t in threads:
            t.start()
        await bus.wait(2, 10)
        elapsed = time.monotonic() - start
        for t in threads:
            t.join()
        return elapsed

    elapsed = asyncio.run(main())
    assert 0.25 <= elapsed < 2
    assert bus.last_seq == 3


def test_many_concurrent_waiters_all_wake() -> None:
    bus = EventBus()

    async def main() -> None:
        waiters = [asyncio.create_task(bus.wait(0, 10)) for _ in range(50)]
        await asyncio.sleep(0.05)
        threading.Thread(target=bus.emit, args=("agent", "x")).start()
        await asyncio.wait_for(asyncio.gather(*waiters), 2)

    asyncio.run(main())
    assert not bus._waiters


def test_emit_survives_a_waiter_whose_loop_has_closed() -> None:
    bus = EventBus()
    loop = asyncio.new_event_loop()
    loop.close()
    bus._waiters.add((loop, asyncio.Event()))  # as if that loop died mid-wait
    bus.emit("agent", "x")
    assert bus.last_seq == 1


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=3 * DEFAULT_CAPACITY))
def test_the_default_ring_stays_bounded_however_many_events(n: int) -> None:
    """Every message emits events: a bot that runs for weeks must hold at most DEFAULT_CAPACITY."""
    bus = EventBus()
    for i in range(n):
        bus.emit("agent", "run.finished", {"run_id": str(i), "ms": i})
    kept = bus.poll(0, limit=10 * DEFAULT_CAPACITY)
    assert len(kept) == min(n, DEFAULT_CAPACITY) <= 1_000
    assert [e.seq for e in kept] == list(range(n - len(kept) + 1, n + 1))  # the newest, in order
