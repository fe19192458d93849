"""The signer's "now": never earlier than a time it already used, never slower than real time.

Spends are stamped with this time and rolling windows are summed against it. With the plain wall
clock, setting it back (a boot before NTP sync, a spoofed NTP answer, an operator's mistake) stamps
spends in the past, and they fall out of their window as soon as the clock is corrected: a 24 h
limit could be spent again within seconds. So:

- the clock starts no earlier than the latest time already written to the database
  (`latest_recorded`), so a restart with the wall clock behind cannot rewind the windows;
- every reading is a high-water mark, and while the wall clock is behind that mark the signer's
  time advances from it at the rate of the monotonic clock, which a change of the system time does
  not move. Spends made while the wall clock is behind are stamped at (roughly) the real time, so
  when the wall clock jumps forward again none of them leaves its window early.

It follows the wall clock forward: a forward jump cannot be told from an NTP correction, so spends
made before one count as older than they are (docs/signer-protocol.md). Protect the time source.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

log = logging.getLogger("owlia.signer")
BEHIND_WARNING_SECONDS = 60.0


class SignerClock:
    """Callable like `time.time`; one reading costs two clock reads, a comparison and an uncontended
    lock (some records are stamped on the writer thread, e.g. when an approval closes)."""

    __slots__ = ("_wall", "_mono", "_last", "_last_mono", "_lock")

    def __init__(self, floor: float = 0.0, *, wall: Callable[[], float] = time.time,
                 mono: Callable[[], float] = time.monotonic) -> None:
        self._wall = wall
        self._mono = mono
        self._last = max(wall(), floor)
        self._last_mono = mono()
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            wall, mono = self._wall(), self._mono()
            steady = self._last + (mono - self._last_mono)  # the last reading plus the real time since
            now = wall if wall > steady else steady
            self._last, self._last_mono = now, mono
            return now

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


def latest_recorded(conn: sqlite3.Connection) -> float:
    """The latest request, spend or audit time on record (0 for a new home). Read once, at start."""
    row = conn.execute(
        "SELECT MAX(t) FROM (SELECT MAX(created_at) AS t FROM requests UNION ALL SELECT MAX(ts) FROM spends"
        " UNION ALL SELECT * FROM (SELECT ts FROM audit ORDER BY seq DESC LIMIT 1))"
    ).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0
