"""SchedulerService: APScheduler wakes us at each fire time; cron.db decides what actually runs.

APScheduler (AsyncIOScheduler, in-memory) only does the timing. Every wake-up, and start-up after
downtime, goes through `plan_fires` against the job's stored watermark, so each fire is handled
exactly once: run, coalesced into one run, or recorded as missed. The watermark moves before the
run starts (at most once: a run cut off by a crash is recorded as interrupted, never repeated,
since it may already have had effects). Jobs added by tools or `owlia cron` from another process
are noticed through `PRAGMA data_version`, checked whenever the event bus stirs or every
`sync_interval` seconds.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.config import CronSettings
from bot.notify import Notifier
from bot.runtime.unattended import Result, run_job
from bot.scheduler.jobs import make_trigger
from bot.scheduler.plan import MAX_COUNT, counted, plan_fires
from bot.scheduler.store import Job, JobStore

if TYPE_CHECKING:
    from bot.runtime.state import Runtime

log = logging.getLogger(__name__)
UTC = dt.timezone.utc


def _at(epoch: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, UTC)


class SchedulerService:
    def __init__(
        self,
        runtime: Runtime,
        notifier: Notifier,
        settings: CronSettings,
        *,
        clock: Callable[[], float] = time.time,
        sync_interval: float = 5.0,
    ) -> None:
        self.runtime = runtime
        self.notifier = notifier
        self.settings = settings
        self.clock = clock
        self.sync_interval = sync_interval
        self.store: JobStore | None = None
        self._scheduler = None
        self._watch: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._known: set[str] = set()
        self._stopping = False

    # ---- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if not self.settings.enabled or self.store is not None:
            return
        from apscheduler.schedulers.asyncio import AsyncIOScheduler  # lazy: 33 ms, 3176 KiB

        state = self.runtime.services.state_dir
        if state is None:
            raise RuntimeError("the scheduler needs the bot's state directory")
        self.store = JobStore(state)
        interrupted = self.store.interrupt_running(self.clock())
        if interrupted:
            log.warning("%d scheduled run(s) were cut off by the last shutdown; not repeated", interrupted)
        scheduler = AsyncIOScheduler(
            timezone=UTC, job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
        )
        scheduler.start()
        self._scheduler = scheduler
        version = self.store.data_version()  # read before loading: a change after it is noticed
        self._sync(trigger="catchup")
        self._watch = asyncio.create_task(self._watch_changes(version))

    async def stop(self) -> None:
        if self.store is None:
            return
        self._stopping = True  # asyncio.wait_for can swallow a cancel (bpo-42130): the loop checks this too
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.store.interrupt_running(self.clock())
        self.store.close()
        self.store, self._scheduler, self._watch, self._stopping = None, None, None, False
        self._known.clear()

    async def drain(self) -> None:
        """Wait until no run is in flight (for tests and an orderly shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
            await asyncio.sleep(0)  # let the done-callbacks drop finished tasks

    # ---- keeping APScheduler in line with cron.db ---------------------------------------------

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("cron: a scheduled run failed", exc_info=task.exception())

    def _sync(self, trigger: str = "schedule") -> None:
        assert self.store is not None and self._scheduler is not None
        active = {job.id for job in self.store.active()}
        for job_id in active - self._known:
            self._spawn(self._process(job_id, trigger))
        for job_id in self._known - active:
            self._unschedule(job_id)
        self._known = active
        for job_id in self.store.take_run_requests():
            self._spawn(self._manual(job_id))

    async def _watch_changes(self, version: int) -> None:
        assert self.store is not None
        events = self.runtime.events
        seen_seq = events.last_seq
        while not self._stopping:
            await events.wait(seen_seq, self.sync_interval)
            seen_seq = events.last_seq
            current = self.store.data_version()
            if current != version:
                version = current
                try:
                    self._sync()
                except Exception:  # noqa: BLE001 - a bad row must not stop the scheduler
                    log.exception("cron: could not reload jobs")

    def _unschedule(self, job_id: str) -> None:
        if self._scheduler is not None and self._scheduler.get_job(job_id) is not None:
            self._scheduler.remove_job(job_id)
        self._known.discard(job_id)

    async def _wake(self, job_id: str) -> None:
        """Called by APScheduler at a fire time."""
        self._spawn(self._process(job_id, "schedule"))

    # ---- fires ------------------------------------------------------------------------------

    async def _process(self, job_id: str, trigger: str) -> None:
        store = self.store
        assert store is not None and self._scheduler is not None
        async with self._locks.setdefault(job_id, asyncio.Lock()):
            job = store.get(job_id)
            if job is None or job.state != "active":
                self._unschedule(job_id)
                return
            try:
                fires = make_trigger(job.spec, job.created_at, self.settings.timezone)
            except ValueError as exc:  # e.g. a timezone this machine no longer knows
                store.start_run(job.id, trigger, None, status="error", detail=f"cannot schedule: {exc}")
                store.advance(job.id, self.clock(), finished=True)
                return
            now = self.clock()
            plan = plan_fires(
                fires,
                _at(job.watermark),
                _at(now),
                self.settings.misfire_grace_seconds,
                self.settings.coalesce,
            )
            if not store.advance(job.id, now, finished=plan.next_fire is None):
                return
            if plan.missed:
                assert plan.first_missed is not None and plan.last_missed is not None
                end = "on" if plan.missed >= MAX_COUNT else f"to {plan.last_missed:%Y-%m-%d %H:%M} UTC"
                detail = (
                    f"{counted(plan.missed)} fires from {plan.first_missed:%Y-%m-%d %H:%M} {end} were "
                    f"more than {self.settings.misfire_grace_seconds}s late; not run"
                )
                store.start_run(
                    job.id,
                    trigger,
                    plan.first_missed.timestamp(),
                    fires=plan.missed,
                    status="missed",
                    detail=detail,
                )
                self.runtime.events.emit("cron", "job.missed", {"job_id": job.id, "fires": plan.missed})
            extra = plan.coalesced
            for index, when in enumerate(plan.runs):
                folded = extra if self.settings.coalesce and index == len(plan.runs) - 1 else 0
                await self._execute(job, trigger, when.timestamp(), 1 + folded)
            if extra and not self.settings.coalesce:
                store.start_run(
                    job.id,
                    trigger,
                    None,
                    fires=extra,
                    status="missed",
                    detail=f"{extra} more fire(s) over the catch-up limit; not run",
                )
            if plan.next_fire is None:
                self._unschedule(job.id)
            else:
                self._scheduler.add_job(
                    self._wake,
                    fires,
                    args=[job.id],
                    id=job.id,
                    replace_existing=True,
                    next_run_time=plan.next_fire,
                )

    async def _manual(self, job_id: str) -> None:
        assert self.store is not None
        job = self.store.get(job_id)
        if job is not None and job.state == "active":
            async with self._locks.setdefault(job_id, asyncio.Lock()):
                await self._execute(job, "manual", None, 1)

    async def _execute(self, job: Job, trigger: str, scheduled: float | None, fires: int) -> Result:
        assert self.store is not None
        run_id = self.store.start_run(job.id, trigger, scheduled, fires=fires, now=self.clock())
        self.runtime.events.emit(
            "cron", "job.started", {"job_id": job.id, "trigger": trigger, "fires": fires}
        )
        try:
            result = await run_job(self.runtime, self.notifier, job)
        except Exception as exc:  # noqa: BLE001 - recorded; the scheduler keeps going
            log.exception("cron job %s failed", job.id)
            result = Result("error", f"internal error ({type(exc).__name__})")
        self.store.finish_run(run_id, result.status, result.detail, now=self.clock())
        self.runtime.events.emit(
            "cron", "job.finished", {"job_id": job.id, "trigger": trigger, "status": result.status}
        )
        return result
