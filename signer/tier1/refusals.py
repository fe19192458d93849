"""How many refusals of the companion channel go on record: all, up to a budget per minute.

Every refused pairing, answer, freeze or top-up is an audit record and a commit. A hostile bridge
can send forged messages as fast as the socket carries them (about a thousand a second), which
would grow the audit log by gigabytes a day and, once the disk is full, stop Tier 2 signing too.
Each kind of refusal therefore gets a budget per minute. Past it, refusals are still refused and
counted, and the next one that is recorded says how many were not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WINDOW_SECONDS = 60.0
RECORDED_PER_WINDOW = 20


@dataclass
class RefusalBudget:
    per_window: int = RECORDED_PER_WINDOW
    window: float = WINDOW_SECONDS
    _started: dict[str, float] = field(default_factory=dict)
    _recorded: dict[str, int] = field(default_factory=dict)
    _unrecorded: dict[str, int] = field(default_factory=dict)

    def admit(self, kind: str, now: float) -> int | None:
        """None: do not record this one (it is counted). Otherwise record it, noting the returned
        number of refusals of this kind that were not recorded since the last one that was."""
        if now - self._started.get(kind, float("-inf")) >= self.window:
            self._started[kind], self._recorded[kind] = now, 0
        if self._recorded[kind] >= self.per_window:
            self._unrecorded[kind] = self._unrecorded.get(kind, 0) + 1
            return None
        self._recorded[kind] += 1
        return self._unrecorded.pop(kind, 0)
