"""The signer's "now": never earlier than a time it already used, and never faster than real time by much.

Spends are stamped with this time and rolling windows are summed against it, so whoever moves the
system clock moves the windows. With the plain wall clock, setting it back (a boot before NTP sync,
a spoofed NTP answer, an operator's mistake) stamps spends in the past, and they leave their window
as soon as the clock is corrected; stepping it forward a day empties every 24 h window at once.
Either way a 24 h limit could be spent again within seconds. So:

- the clock starts no earlier than the latest time already written to the database
  (`latest_recorded`), so a restart with the wall clock behind cannot rewind the windows;
- every reading is a high-water mark, and while the wall clock is behind that mark the signer's
  time advances from it at the rate of a steady clock, which a change of the system time does not
  move. Spends made while the wall clock is behind are stamped at (roughly) the real time, so when
  the wall clock is put right none of them leaves its window early;
- while the wall clock is ahead, the signer's time follows it at most `1 + CATCH_UP` times as fast
  as the steady clock. NTP's drift corrections (parts per million) are followed at once; a forward
  step of D is absorbed over D / CATCH_UP of real time (a day's step over ten days), so a window
  closes early by at most CATCH_UP / (1 + CATCH_UP) of its length (about 9 %), however far the clock
  is stepped. A far-future glitch that lasts a second moves the signer's time by 1.1 s, not for good.

The steady clock is CLOCK_BOOTTIME where the OS has one (Linux): unlike CLOCK_MONOTONIC it counts
time spent suspended, so a laptop that slept 8 h is not 8 h behind when it wakes.

What this cannot see: a forward step made while the signer is not running. At start-up the clock
is max(wall clock, latest on record), and a step then cannot be told from downtime, so spends made
before it count as older than they are (docs/signer-protocol.md). Protect the time source.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Callable

log = logging.getLogger("owlia.signer")
CATCH_UP = 0.1  # how much faster than real time the signer's time may run while the wall clock is ahead
BEHIND_WARNING_SECONDS = 60.0
STEP_WARNING_SECONDS = 60.0
_FASTEST = 1.0 + CATCH_UP


def steady_source() -> Callable[[], float]:
    """CLOCK_BOOTTIME if this OS has it (it counts suspend), else `time.monotonic`."""
    clock_id = getattr(time, "CLOCK_BOOTTIME", None)
    if clock_id is not None:
        try:
            time.clock_gettime(clock_id)
        except OSError:
            return time.monotonic
        return functools.partial(time.clock_gettime, clock_id)
    return time.monotonic


steady = steady_source()


class SignerClock:
    """Callable like `time.time`; one reading costs one uncontended lock (some records are stamped on
    the writer thread), two clock reads and a few comparisons."""

    __slots__ = ("_wall", "_steady", "_now", "_steady_at", "_wall_at", "_lock")

    def __init__(self, floor: float = 0.0, *, wall: Callable[[], float] = time.time,
                 steady: Callable[[], float] = steady) -> None:
        self._wall = wall
        self._steady = steady
        self._wall_at = wall()
        self._now = max(self._wall_at, floor)
        self._steady_at = steady()
        self._lock = threading.Lock()

    def __call__(self) -> float:
        step = 0.0
        with self._lock:
            wall, steady_now, last = self._wall(), self._steady(), self._now
            elapsed = steady_now - self._steady_at
            if elapsed < 0.0:  # a steady clock never goes back; guard anyway
                elapsed = 0.0
            now = last + elapsed  # the last reading plus the real time since: the slowest it may go
            if wall > now:
                fastest = last + elapsed * _FASTEST
                if wall <= fastest:
                    now = wall  # drift, or the tail of a catch-up: follow the wall clock exactly
                else:
                    now = fastest
                    step = wall - self._wall_at - elapsed  # how far the wall clock jumped since the last reading
                    if step <= STEP_WARNING_SECONDS or wall - now <= STEP_WARNING_SECONDS:
                        step = 0.0
            self._now, self._steady_at, self._wall_at = now, steady_now, wall
        if step:
            _warn_step(step, wall - now)
        return now

    def lag(self) -> float:
        """How far the system clock is ahead of the signer's time now (negative: behind it, e.g. set back)."""
        now = self()
        return self._wall() - now

    @classmethod
    def resume(cls, conn: sqlite3.Connection, **clocks: Callable[[], float]) -> SignerClock:
        """Start from the database: never before the latest time the signer has written down."""
        floor = latest_recorded(conn)
        clock = cls(floor, **clocks)
        behind = floor - clock._wall()
        if behind > BEHIND_WARNING_SECONDS:
            log.warning("the system clock is %.0f s behind the signer's last record; the signer keeps time from "
                        "that record until the system clock catches up", behind)
        return clock


def _warn_step(step: float, lag: float) -> None:
    """Once per forward step: the signer's time now trails the system clock until it has caught up."""
    log.warning("the system clock jumped %.0f s forward; the signer's clock is %.0f s behind it and follows at most "
                "%.0f%% faster than real time (caught up in about %.1f h). If the jump was wrong, put the clock "
                "right", step, lag, CATCH_UP * 100, lag / CATCH_UP / 3600)


def latest_recorded(conn: sqlite3.Connection) -> float:
    """The latest request, spend or audit time on record (0 for a new home). Read once, at start."""
    row = conn.execute(
        "SELECT MAX(t) FROM (SELECT MAX(created_at) AS t FROM requests UNION ALL SELECT MAX(ts) FROM spends"
        " UNION ALL SELECT * FROM (SELECT ts FROM audit ORDER BY seq DESC LIMIT 1))"
    ).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0
