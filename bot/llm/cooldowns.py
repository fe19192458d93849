"""Per-profile failure counts and cooldown deadlines, kept on disk (bot/llm/failover.py uses them).

On their own so that `/health`'s provider check (is any credentialed profile out of cooldown?) reads
them without importing the failover router and the request and stream types under it: those load
just after ready.

Several writers share the file: the failover routers of one bot (the chat's and the heartbeat's)
and those of `owlia chat` beside it. Each change re-reads the file under its lock and changes only
its profile; writing back a copy loaded earlier would erase the others' cooldowns, and `/health`
(which reads the file) would call a failing provider ready.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from policies.kernel.files import write_private_file
from policies.kernel.locks import locked_beside

log = logging.getLogger("bot.llm.failover")  # the name these warnings always had

MAX_COOLDOWN = 3600.0


def cooldown_seconds(failures: int) -> float:
    """Cooldown after the `failures`-th consecutive failure: 1 min, 5 min, 25 min, then 1 h."""
    if failures < 1:
        return 0.0
    return float(min(MAX_COOLDOWN, 60 * 5 ** (failures - 1)))


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
        with locked_beside(self.path):
            self.states = self._load()
            state = self.states.setdefault(name, _State())
            state.failures += 1
            state.until = now + cooldown_seconds(state.failures)
            self.save()
            return state.until

    def record_success(self, name: str) -> None:
        with locked_beside(self.path):
            self.states = self._load()
            if name in self.states:
                del self.states[name]
                self.save()
