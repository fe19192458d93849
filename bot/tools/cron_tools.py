"""`cron_add` / `cron_list` / `cron_remove`: the assistant schedules jobs for the chat it is in.

Adding and removing are `write` tools, so the user confirms the exact schedule (with the next fire
time) and payload first. A job made here always reports back to the chat it was made in (the model
cannot route output elsewhere), always runs with read tools only (CRON context), stores an explicit
timezone, and counts against the chat's bound on active jobs. Its text is untrusted when it runs.
A system event made here may not contain an address: it is injected into the main chat, where an
address would later count as typed by the user (see bot.tools.provenance).
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field, model_validator

from bot.scheduler.jobs import (
    MAX_PROMPT,
    AgentTurn,
    JobSpec,
    Reminder,
    SystemEvent,
    build_schedule,
    next_fire,
    utc_text,
    zone,
)
from bot.scheduler.store import Job, JobLimit, JobStore
from bot.sessions.keys import target_of_session
from bot.tools.base import Level, NoArgs, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from bot.tools.provenance import addresses_in

MAX_MINUTES = 525_600


def job_store(ctx: ToolContext) -> JobStore:
    if ctx.services.state_dir is None:
        raise ToolFailure("scheduling is not configured (the bot has no state directory)")
    return JobStore(ctx.services.state_dir)


def add_job(ctx: ToolContext, spec: JobSpec) -> Job:
    """Store a job owned by this chat and wake the scheduler (it also notices on its own)."""
    now = time.time()
    try:
        spec.check_window(now)
    except ValueError as exc:
        raise ToolFailure(f"{exc}; nothing was scheduled") from None
    try:
        with job_store(ctx) as store:
            job = store.add(spec, owner=ctx.session_key, origin="agent", now=now)
    except JobLimit as exc:
        raise ToolFailure(str(exc)) from None
    ctx.services.events.emit(
        "cron", "job.added", {"job_id": job.id, "session": ctx.session_key, "kind": spec.payload.kind}
    )
    return job


def _when(job_spec: JobSpec) -> str:
    upcoming = next_fire(job_spec, time.time(), job_spec.timezone or "UTC")
    return utc_text(upcoming) if upcoming is not None else "never"


class CronAddArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=MAX_PROMPT, description="the reminder text or the task")
    kind: Literal["reminder", "agentTurn", "systemEvent"] = Field(
        default="agentTurn",
        description="reminder: send the text; agentTurn: you run the task (read-only "
        "tools) and the answer is sent here; systemEvent: the text arrives in this chat as a system note",
    )
    at: str | None = Field(default=None, max_length=40, description="once: ISO-8601 with timezone offset")
    every_minutes: int | None = Field(default=None, ge=1, le=MAX_MINUTES, description="repeat interval")
    cron: str | None = Field(default=None, max_length=120, description="5-field crontab, e.g. '0 9 * * 1-5'")
    timezone: str = Field(default="UTC", max_length=64, description="IANA zone for cron, e.g. Europe/Berlin")
    name: str = Field(default="", max_length=80)

    @model_validator(mode="after")
    def _spec(self) -> CronAddArgs:
        self.spec(session_key="console:check")  # validate everything before the user is asked
        return self

    def spec(self, session_key: str) -> JobSpec:
        zone(self.timezone)
        schedule = build_schedule(self.at, self.every_minutes * 60 if self.every_minutes else None, self.cron)
        if self.kind == "reminder":
            payload: Reminder | AgentTurn | SystemEvent = Reminder(text=self.text)
        elif self.kind == "systemEvent":
            if addresses_in(self.text):
                raise ValueError("a system event may not contain an address; use an agentTurn job instead")
            payload = SystemEvent(text=self.text)
        else:
            payload = AgentTurn(prompt=self.text)
        spec = JobSpec(
            name=self.name,
            schedule=schedule,
            payload=payload,
            timezone=self.timezone,
            target=target_of_session(session_key),
        )
        spec.check_window(time.time())
        return spec


def _confirm_add(args: CronAddArgs) -> str:
    spec = args.spec(session_key="console:check")
    return (
        f"Schedule {spec.describe_schedule('UTC')} (first: {_when(spec)}), reporting to this chat:\n"
        f"{spec.describe_payload()}"
    )


@tool(
    "cron_add",
    Level.WRITE,
    CronAddArgs,
    confirmation=_confirm_add,
    description="""
Schedule a job for this chat: a reminder, a task you run later with read-only tools (agentTurn), or a
system note. Exactly one of at / every_minutes / cron. Results always come back to this chat.""",
)
async def cron_add(ctx: ToolContext, args: CronAddArgs) -> ToolOutput:
    try:
        spec = args.spec(ctx.session_key)
    except ValueError as exc:
        raise ToolFailure(f"{exc}; nothing was scheduled") from None
    job = add_job(ctx, spec)
    return ToolOutput(
        f"Scheduled job {job.id}: {spec.describe_schedule('UTC')}, first at {_when(spec)}.",
        untrusted=False,
        data={"id": job.id},
    )


def describe_job(job: Job, default_tz: str = "UTC") -> str:
    spec = job.spec
    upcoming = next_fire(spec, job.created_at, default_tz, after=max(job.watermark, time.time()))
    label = f" ({spec.name})" if spec.name else ""
    return (
        f"{job.id}{label}: {spec.describe_schedule(default_tz)}, next "
        f"{utc_text(upcoming) if upcoming is not None else 'never'}: {spec.describe_payload()}"
    )


@tool("cron_list", Level.READ, NoArgs, description="This chat's scheduled jobs and reminders.")
async def cron_list(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    with job_store(ctx) as store:
        jobs = store.active(ctx.session_key)
    if not jobs:
        return ToolOutput("No scheduled jobs in this chat.", untrusted=False, data={"jobs": []})
    return ToolOutput(
        "\n".join(describe_job(j) for j in jobs),
        untrusted=True,
        data={"jobs": [{"id": j.id, "kind": j.spec.payload.kind} for j in jobs]},
    )


class CronRemoveArgs(ToolArgs):
    id: str = Field(pattern=r"^j[0-9a-f]{8}$")


@tool(
    "cron_remove",
    Level.WRITE,
    CronRemoveArgs,
    confirmation=lambda a: f"Cancel scheduled job {a.id}",
    description="Cancel one of this chat's scheduled jobs or reminders by id.",
)
async def cron_remove(ctx: ToolContext, args: CronRemoveArgs) -> ToolOutput:
    with job_store(ctx) as store:
        removed = store.remove(args.id, owner=ctx.session_key)
    if not removed:
        raise ToolFailure(f"no active job {args.id} in this chat")
    ctx.services.events.emit("cron", "job.removed", {"job_id": args.id, "session": ctx.session_key})
    return ToolOutput(f"Job {args.id} cancelled.", untrusted=False, data={"id": args.id})


CRON_TOOLS = (cron_add, cron_list, cron_remove)
