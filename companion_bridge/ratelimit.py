"""Token buckets on a monotonic clock, kept as integers so a limit is exact, never "about".

A bucket is stored as its theoretical arrival time (GCRA): the instant, in nanoseconds, at which it
would be full again. Taking `cost` tokens moves that instant `cost` intervals later; a take that
would push it more than `burst` intervals past now is refused and says how long to wait. Over any
stretch of time a bucket admits at most `burst + elapsed / interval` tokens, with no float drift.
Pure: the caller passes the clock, so tests and hypothesis drive time by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Rate:
    """At most `burst` at once, refilled at `per_second` (one token every 1/per_second s)."""

    burst: int
    per_second: float

    def __post_init__(self) -> None:
        if self.burst < 1 or not self.per_second > 0:
            raise ValueError(
                f"a rate needs burst >= 1 and per_second > 0, not {self.burst}, {self.per_second}"
            )

    @property
    def interval_ns(self) -> int:
        return max(1, round(NS / self.per_second))


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    retry_after_ns: int = 0  # when refused: wait this long and the same take succeeds

    @property
    def retry_after(self) -> float:
        return self.retry_after_ns / NS


ALLOWED = Verdict(True)


def take(rate: Rate, tat: int, now: int, cost: int = 1) -> tuple[Verdict, int]:
    """One take from a bucket whose theoretical arrival time is `tat`: (verdict, new tat).
    A refused take costs nothing, so waiting `retry_after` is always enough."""
    if not 1 <= cost <= rate.burst:
        raise ValueError(f"cost {cost} must be between 1 and the burst {rate.burst}")
    interval = rate.interval_ns
    new_tat = max(tat, now) + cost * interval
    over = new_tat - now - rate.burst * interval
    if over > 0:
        return Verdict(False, over), tat
    return ALLOWED, new_tat


class Limiter:
    """One bucket per key (a device, a peer address). Memory is bounded: full buckets are forgotten
    (a full bucket and a missing one are the same), and when `max_keys` distinct keys are all still
    draining, a new key is refused rather than an old one evicted, so a flood cannot reset anyone."""

    def __init__(
        self, rate: Rate, *, max_keys: int = 10_000, clock: Callable[[], int] = time.monotonic_ns
    ) -> None:
        self.rate = rate
        self.max_keys = max_keys
        self.clock = clock
        self._tat: dict[Hashable, int] = {}

    def take(self, key: Hashable, cost: int = 1) -> Verdict:
        now = self.clock()
        if key not in self._tat and len(self._tat) >= self.max_keys:
            self._tat = {k: t for k, t in self._tat.items() if t > now}
            if len(self._tat) >= self.max_keys:
                return Verdict(False, min(self._tat.values()) - now)
        verdict, self._tat[key] = take(self.rate, self._tat.get(key, now), now, cost)
        return verdict

    def penalize(self, key: Hashable, cost: int) -> None:
        """Charge `cost` more after an admitted take turned out to be a failed attempt, even into
        debt: the next take waits longer. Debt stays bounded by burst + cost, because a take is only
        admitted while the bucket is not in debt."""
        now = self.clock()
        if key in self._tat or len(self._tat) < self.max_keys:
            self._tat[key] = max(self._tat.get(key, now), now) + cost * self.rate.interval_ns

    def __len__(self) -> int:
        return len(self._tat)
