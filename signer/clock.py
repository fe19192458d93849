"""The signer's "now": never earlier than a time it already used, and never faster than real time by much.

Spends are stamped with this time and rolling windows are summed against it, so whoever moves the
system clock moves the windows. With the plain wall clock, setting it back (a boot before NTP sync,
a spoofed NTP answer, an operator's mistake) stamps spends in the past, and they leave their window
as soon as the clock is corrected; stepping it forward a day empties every 24 h window at once.
Either way a 24 h limit could be spent again within seconds. So:

- every reading is a high-water mark, and while the wall clock is behind that mark the signer's
  time advances from it at the rate of a steady clock, which a change of the system time does not
  move. Spends made while the wall clock is behind are stamped at (roughly) the real time, so when
  the wall clock is put right none of them leaves its window early;
- while the wall clock is ahead, the signer's time follows it at most `1 + CATCH_UP` times as fast
  as the steady clock. NTP's drift corrections (parts per million) are followed at once; a forward
  step of D is absorbed over D / CATCH_UP of real time (a day's step over ten days), so a window
  closes early by at most CATCH_UP / (1 + CATCH_UP) of its length (about 9 %), however far the clock
  is stepped. A far-future glitch that lasts a second moves the signer's time by 1.1 s, not for good;
- the daemon saves the clock's state (`ClockState`: its time, the wall and steady clocks read with
  it, the boot id) in the `meta` table every SAVE_INTERVAL_SECONDS and at a clean shutdown, and a
  restart resumes from it (`start_time`), so neither a restart nor a reboot undoes the two rules
  above. Only the daemon writes that state; the floor it resumes above is that state and the
  latest spend and request, all written by the daemon alone, never by the admin CLI (whose records
  carry whatever clock it ran with).

The steady clock is CLOCK_BOOTTIME where the OS has one (Linux): unlike CLOCK_MONOTONIC it counts
time spent suspended, so a laptop that slept 8 h is not 8 h behind when it wakes.

What this cannot see (docs/signer-protocol.md, "Time"):
- a forward step made while the signer is stopped across a reboot: the steady clock restarts at
  boot, so real downtime cannot be told from a step, and spends made before it count as older than
  they are (a lag being absorbed when it stopped is kept, on top of it). Within one boot the downtime is measured by
  CLOCK_BOOTTIME and a step while stopped is absorbed like one made while running;
- the last SAVE_INTERVAL_SECONDS before a crash: after a kill -9 or a power cut followed by a
  reboot with the clock set back, the signer may resume up to SAVE_INTERVAL_SECONDS x (1 + CATCH_UP)
  earlier than its last reading (never before a spend or request on record).
Protect the time source.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from signer.store.db import Connection, get_meta, set_meta
from signer.store.requests import latest_stamp

log = logging.getLogger("owlia.signer")
CATCH_UP = 0.1  # how much faster than real time the signer's time may run while the wall clock is ahead
BEHIND_WARNING_SECONDS = 60.0
STEP_WARNING_SECONDS = 60.0
SAVE_INTERVAL_SECONDS = 10.0  # how often the daemon saves its clock: what a crash can lose of its time
MAX_STATE_CHARS = 1000  # a saved state is about 150 characters; a longer row is not one
STATE_KEY = "clock"  # the meta row holding the saved ClockState (written by the daemon only)
BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")
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
_STEADY_IS_BOOTTIME = steady is not time.monotonic


def read_boot_id() -> str | None:
    """This boot's id (Linux), or None: a steady reading means something only within its boot.

    None too where the steady clock is the `time.monotonic` fallback (no CLOCK_BOOTTIME, so no boot
    id either): a saved steady reading is then never trusted, and a restart counts as a reboot."""
    if not _STEADY_IS_BOOTTIME:
        return None
    try:
        text = BOOT_ID_PATH.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


@dataclass(frozen=True, slots=True)
class ClockState:
    """One reading of the signer's clock with the two clocks it was taken from, to resume from it."""

    signer: float  # the signer's time
    wall: float  # the system clock at that reading
    steady: float  # the steady clock (CLOCK_BOOTTIME) at that reading
    boot_id: str | None  # the boot the steady reading belongs to; None: unknown, never matched

    def to_json(self) -> str:
        return json.dumps(
            {"signer": self.signer, "wall": self.wall, "steady": self.steady, "boot_id": self.boot_id}
        )

    @classmethod
    def from_json(cls, text: str | None) -> ClockState | None:
        """None for nothing saved or anything malformed: the floor of records still holds then."""
        if text is None or len(text) > MAX_STATE_CHARS:
            return None
        try:
            data = json.loads(text)
            signer, wall, steady_reading = (float(data[k]) for k in ("signer", "wall", "steady"))
            boot_id = data.get("boot_id")
        except Exception:  # noqa: BLE001 - whatever is in the row (OverflowError, RecursionError...): not a state
            return None
        if not all(math.isfinite(v) for v in (signer, wall, steady_reading)) or not isinstance(
            boot_id, (str, type(None))
        ):
            return None
        return cls(signer, wall, steady_reading, boot_id or None)


def load_state(conn: Connection) -> ClockState | None:
    text = get_meta(conn, STATE_KEY)
    state = ClockState.from_json(text)
    if state is None and text is not None:
        log.warning("the signer's saved clock is malformed; resuming from the latest record alone")
    return state


def save_state(conn: Connection, state: ClockState) -> None:
    """Inside the caller's transaction (the daemon's writer): one small row, overwritten in place."""
    set_meta(conn, STATE_KEY, state.to_json())


class SignerClock:
    """Callable like `time.time`; one reading costs one uncontended lock (some records are stamped on
    the writer thread), two clock reads and a few comparisons. No I/O: it is read per request."""

    __slots__ = ("_wall", "_steady", "_now", "_steady_at", "_wall_at", "_lock", "_boot_id")

    def __init__(
        self,
        *,
        wall: Callable[[], float] = time.time,
        steady: Callable[[], float] = steady,
        start: float | None = None,
        boot_id: str | None = None,
    ) -> None:
        """`start`: the first reading (`resume` works it out, never below the records); by default the wall clock."""
        self._wall = wall
        self._steady = steady
        self._wall_at = wall()
        self._now = self._wall_at if start is None else start
        self._steady_at = steady()
        self._boot_id = boot_id
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
                    step = (
                        wall - self._wall_at - elapsed
                    )  # how far the wall clock jumped since the last reading
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

    def state(self) -> ClockState:
        """A fresh reading with the clocks it came from: what the daemon saves (`save_state`)."""
        self()
        with self._lock:
            return ClockState(self._now, self._wall_at, self._steady_at, self._boot_id)

    @classmethod
    def resume(
        cls,
        conn: Connection,
        *,
        wall: Callable[[], float] = time.time,
        steady: Callable[[], float] = steady,
        boot_id: Callable[[], str | None] = read_boot_id,
    ) -> SignerClock:
        """Start from the saved clock and the records (`start_time`): a restart neither rewinds the
        signer's time nor adopts a forward step it was absorbing or that happened while it was stopped."""
        saved, floor, booted = load_state(conn), latest_recorded(conn), boot_id()
        wall_now, steady_now = wall(), steady()
        start = start_time(saved, floor, wall_now, steady_now, booted)
        clock = cls(wall=wall, steady=steady, start=start, boot_id=booted)
        _warn_resume(start, wall_now)
        return clock


def start_time(
    saved: ClockState | None, floor: float, wall: float, steady_now: float, boot_id: str | None
) -> float:
    """Where the signer's time resumes, never below `floor` nor the saved time.

    Same boot (a restart without reboot): the steady clock measured the downtime exactly, so the
    signer's time moves on by it and follows a wall clock that moved further by at most CATCH_UP
    more: a step being absorbed stays absorbed, one made while stopped is absorbed the same way,
    and a clock set back rewinds nothing. Another boot, or nothing saved: the downtime is unknown,
    so the wall clock is taken, less the lag that was being absorbed when the state was saved.
    """
    if saved is None:
        return max(floor, wall)
    floor = max(floor, saved.signer)
    if saved.boot_id is not None and saved.boot_id == boot_id:
        elapsed = max(0.0, steady_now - saved.steady)
        return max(floor, min(max(wall, saved.signer + elapsed), saved.signer + elapsed * _FASTEST))
    return max(floor, wall - max(0.0, saved.wall - saved.signer))


def estimate(
    conn: Connection,
    *,
    wall: Callable[[], float] = time.time,
    steady: Callable[[], float] = steady,
    boot_id: Callable[[], str | None] = read_boot_id,
) -> float:
    """The signer's time as another process (the admin CLI) can best tell it: what the daemon would
    resume at now, from its saved clock. The CLI's records and token expiries then follow the signer's
    clock, not a system clock that may be stepped; they never feed the signer's clock back."""
    return start_time(load_state(conn), latest_recorded(conn), wall(), steady(), boot_id())


def _warn_resume(start: float, wall: float) -> None:
    """Once at start-up, when the signer's time starts far from the system clock, either way."""
    if start - wall > BEHIND_WARNING_SECONDS:
        log.warning(
            "the system clock is %.0f s behind the signer's saved clock; the signer keeps time from "
            "there until the system clock catches up",
            start - wall,
        )
    elif wall - start > BEHIND_WARNING_SECONDS:
        log.warning(
            "the signer resumes %.0f s behind the system clock (a forward step it was absorbing, or one "
            "made while it was stopped); it follows at most %.0f%% faster than real time (caught up in "
            "about %.1f h). If the step was wrong, put the clock right",
            wall - start,
            CATCH_UP * 100,
            (wall - start) / CATCH_UP / 3600,
        )


def _warn_step(step: float, lag: float) -> None:
    """Once per forward step: the signer's time now trails the system clock until it has caught up."""
    log.warning(
        "the system clock jumped %.0f s forward; the signer's clock is %.0f s behind it and follows at most "
        "%.0f%% faster than real time (caught up in about %.1f h). If the jump was wrong, put the clock "
        "right",
        step,
        lag,
        CATCH_UP * 100,
        lag / CATCH_UP / 3600,
    )


def latest_recorded(conn: Connection) -> float:
    """The latest spend or request time on record (0 for a new home). Read once, at start.

    Only tables the daemon alone writes, stamped by its own clock: the audit log and the clients
    table are also written by the admin CLI, with whatever clock it ran with, so they are not trusted
    here (a CLI run with the clock years ahead must not move the signer's time)."""
    latest = latest_stamp(conn)
    return 0.0 if latest is None else latest
