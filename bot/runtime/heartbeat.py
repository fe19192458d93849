"""HeartbeatService: every N minutes within active hours, run HEARTBEAT.md's checks unattended.

The run is HEARTBEAT context: read tools only, so a heartbeat can never reach a write or sign tool
(a model that names one anyway is refused by the executor, and the attempt is in the audit log).
A reply that is just HEARTBEAT_OK is not sent. Each tick that does not run says why (empty
HEARTBEAT.md, outside active hours, previous heartbeat still running) in the cron.db history
under the job id `heartbeat`, so `owlia cron history heartbeat` explains a quiet bot.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.config import HeartbeatSettings
from bot.notify import Notifier
from bot.runtime.unattended import deliver, run_unattended
from bot.scheduler.jobs import zone
from bot.scheduler.store import JobStore
from bot.tools.base import ContextKind
from bot.workspace.templates import HEARTBEAT_MD
from policies.kernel.files import read_regular_text

if TYPE_CHECKING:
    from bot.runtime.state import Runtime

log = logging.getLogger(__name__)

JOB_ID = "heartbeat"
SESSION = "heartbeat:main"
OK_TOKEN = "HEARTBEAT_OK"
_OK_ONLY = re.compile(rf"[\W_]*{OK_TOKEN}[\W_]*")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
PROMPT = (
    "[Heartbeat, not typed by the user] Run the checks listed in HEARTBEAT.md (in your workspace "
    "files) with your read-only tools. If nothing needs the user's attention, reply exactly "
    f"{OK_TOKEN}."
)


def is_ok_only(text: str) -> bool:
    """True for a reply that is just the token (whitespace and punctuation around it allowed)."""
    return _OK_ONLY.fullmatch(text.strip()) is not None


def _checks(text: str) -> list[str]:
    """The meaningful lines: no comments, headings or blank lines."""
    text = _COMMENT.sub("", text)
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def has_checks(text: str) -> bool:
    """An empty file, only comments/headings, or the untouched template all mean: nothing to check."""
    lines = _checks(text)
    return bool(lines) and lines != _checks(HEARTBEAT_MD)


def within_hours(window: str | None, moment: dt.datetime) -> bool:
    """`08:00-22:00` in the moment's timezone; a window like `22:00-06:00` wraps over midnight."""
    if window is None:
        return True
    start, end = (dt.time.fromisoformat(part) for part in window.split("-"))
    now = moment.time()
    return start <= now < end if start <= end else (now >= start or now < end)


class HeartbeatService:
    def __init__(
        self,
        runtime: Runtime,
        notifier: Notifier,
        settings: HeartbeatSettings,
        *,
        clock: Callable[[], float] = time.time,
        interval: float | None = None,
    ) -> None:
        self.runtime = runtime
        self.notifier = notifier
        self.settings = settings
        self.clock = clock
        self.interval = interval if interval is not None else settings.every_minutes * 60.0
        self._task: asyncio.Task[None] | None = None
        self._ticks: set[asyncio.Task[str]] = set()
        self._running = False
        self._stopping = False
        if settings.active_hours is not None:  # a bad window or zone fails at start, not at the first tick
            within_hours(settings.active_hours, dt.datetime.now(zone(settings.timezone)))

    async def start(self) -> None:
        if self.settings.enabled and self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for tick in list(self._ticks):
            tick.cancel()
        await asyncio.gather(*self._ticks, return_exceptions=True)

    async def _loop(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.interval)
            if self._running:
                self._record("skipped", "the previous heartbeat is still running")
                continue
            tick = asyncio.get_running_loop().create_task(self.tick())  # the clock keeps ticking meanwhile
            self._ticks.add(tick)
            tick.add_done_callback(self._ticks.discard)

    async def tick(self) -> str:
        """One heartbeat; returns what happened: ran | suppressed | skipped | error."""
        if self._running:
            return self._record("skipped", "the previous heartbeat is still running")
        now = dt.datetime.fromtimestamp(self.clock(), zone(self.settings.timezone))
        if not within_hours(self.settings.active_hours, now):
            return self._record("skipped", f"outside active hours ({self.settings.active_hours})")
        try:
            text = read_regular_text(self.runtime.services.workspace / "HEARTBEAT.md")
        except OSError:  # missing, a symlink, a directory: no checks (doctor and the chat banner name it)
            text = ""
        if not has_checks(text):
            return self._record("skipped", "HEARTBEAT.md has no checks")
        self._running = True
        try:
            return await self._run()
        except Exception as exc:  # noqa: BLE001 - recorded; the next heartbeat still comes
            log.exception("heartbeat failed")
            return self._record("error", f"internal error ({type(exc).__name__})")
        finally:
            self._running = False

    async def _run(self) -> str:
        run, _ = await run_unattended(
            self.runtime,
            SESSION,
            PROMPT,
            kind=ContextKind.HEARTBEAT,
            channel="heartbeat",
            peer=JOB_ID,
            profile=self.settings.profile,
        )
        if run is None:
            return self._record("skipped", "no language model is configured")
        refused = [e.call.name for e in run.tools if e.outcome == "unavailable"]
        note = f"; refused tools: {', '.join(refused)}" if refused else ""
        if run.stop != "end":
            return self._record("error", f"run stopped: {run.stop}{note}")
        if is_ok_only(run.text):
            self._record("ok", f"{OK_TOKEN} (not sent){note}")
            return "suppressed"
        result = await deliver(self.notifier, run.text, self.settings.target)
        self._record(result.status, result.detail + note)
        return "ran" if result.status == "ok" else result.status

    def _record(self, status: str, detail: str) -> str:
        state = self.runtime.services.state_dir
        if state is not None:
            with JobStore(state) as store:
                now = self.clock()
                store.start_run(JOB_ID, "heartbeat", now, status=status, detail=detail, now=now)
        self.runtime.events.emit("cron", f"heartbeat.{status}", {"detail": detail})
        return status
