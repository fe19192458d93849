"""Which fires of a job are due, and which were missed: the misfire policy as one pure function.

Each job keeps a watermark: every fire at or before it has been handled (run, or recorded as
missed). At start-up and at every wake-up the fires after the watermark up to now are split at
`now - grace`: older ones are recorded as missed and never run; newer ones run once (coalesce) or
each in turn (no coalesce, at most MAX_CATCHUP_RUNS). The same function serves a wake-up on time
and a restart after a week of downtime, so there is one policy, not two.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from bot.scheduler.jobs import fire_after

MAX_COUNT = 1_000  # fires counted per side (missed / due); bounds start-up work, not the run itself
MAX_CATCHUP_RUNS = 10
WAKE_SLACK_SECONDS = 5  # a wake-up this late is still "on time", even with a grace time of 0


@dataclass(frozen=True)
class Plan:
    runs: list[dt.datetime] = field(default_factory=list)  # scheduled times to run now, oldest first
    coalesced: int = 0  # fires folded into the last run (coalesce) or not run (over MAX_CATCHUP_RUNS)
    missed: int = 0  # fires older than the grace time: recorded, not run
    first_missed: dt.datetime | None = None
    last_missed: dt.datetime | None = None
    next_fire: dt.datetime | None = None  # after now; None: the job is finished


def counted(n: int) -> str:
    """A count that may have hit the bound: "1000+" rather than a wrong exact number."""
    return f"{n}+" if n >= MAX_COUNT else str(n)


def _fires(trigger, after: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
    """Fires in (after, until], at most MAX_COUNT of them."""
    out: list[dt.datetime] = []
    moment = fire_after(trigger, after)
    while moment is not None and moment <= until and len(out) < MAX_COUNT:
        out.append(moment)
        moment = fire_after(trigger, moment)
    return out


def _last_fire(trigger, after: dt.datetime, until: dt.datetime) -> dt.datetime | None:
    """The latest fire in (after, until], found from the end (probing further back each time), so a
    month of downtime costs a few trigger steps rather than one per missed fire."""
    span = dt.timedelta(seconds=60)
    while True:
        start = max(after, until - span)
        found = fire_after(trigger, start)
        if found is not None and found <= until:
            following = fire_after(trigger, found)
            while following is not None and following <= until:
                found, following = following, fire_after(trigger, following)
            return found
        if start == after:
            return None
        span *= 2


def plan_fires(trigger, watermark: dt.datetime, now: dt.datetime, grace_seconds: int, coalesce: bool) -> Plan:
    before_cutoff = now - dt.timedelta(seconds=max(grace_seconds, WAKE_SLACK_SECONDS), microseconds=1)
    missed = _fires(trigger, watermark, before_cutoff) if before_cutoff > watermark else []
    due = _fires(trigger, max(watermark, before_cutoff), now)
    if coalesce:
        last = _last_fire(trigger, max(watermark, before_cutoff), now) if due else None
        runs, coalesced = ([last] if last else []), max(0, len(due) - 1)
    else:
        runs, coalesced = due[:MAX_CATCHUP_RUNS], max(0, len(due) - MAX_CATCHUP_RUNS)
    return Plan(
        runs=runs,
        coalesced=coalesced,
        missed=len(missed),
        first_missed=missed[0] if missed else None,
        last_missed=missed[-1] if missed else None,
        next_fire=fire_after(trigger, now),
    )
