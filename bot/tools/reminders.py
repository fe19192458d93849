"""Reminders: one-shot scheduled jobs (`at`) whose delivery is just their text, no model involved.

They live in the scheduler's cron.db like every other job (one mechanism: the SchedulerService
delivers them on time, or per the misfire policy after downtime), owned by the chat that set them,
delivered back to that chat, and bounded per chat together with its other jobs. Times are UTC in
storage and need an explicit timezone on input: "9:00" means something different on the user's
phone and on the server, so it is refused.
"""

from __future__ import annotations

import datetime as dt
import time

from pydantic import Field, field_validator, model_validator

from bot.scheduler.jobs import At, JobSpec, Reminder, ShortText, next_fire, parse_when, utc_text
from bot.sessions.keys import target_of_session
from bot.tools.base import Level, NoArgs, ToolArgs, ToolContext, ToolOutput, tool
from bot.tools.cron_tools import add_job, job_store

MAX_MINUTES = 525_600  # one year

__all__ = ["REMINDER_TOOLS", "SetReminderArgs", "list_reminders", "parse_when", "set_reminder"]


class SetReminderArgs(ToolArgs):
    text: ShortText
    in_minutes: int | None = Field(default=None, ge=1, le=MAX_MINUTES)
    at: str | None = Field(default=None, max_length=40, description="ISO-8601 with timezone")

    @field_validator("at")
    @classmethod
    def _at(cls, value: str | None) -> str | None:
        if value is not None:
            parse_when(value)
        return value

    @model_validator(mode="after")
    def _one_time(self) -> SetReminderArgs:
        if (self.in_minutes is None) == (self.at is None):
            raise ValueError("give exactly one of in_minutes or at")
        if self.at is not None:  # checked again at run time; here so the user never confirms a dud
            self.spec(time.time(), "console:check").check_window(time.time())
        return self

    def due_at(self, now: float) -> int:
        return int(now) + self.in_minutes * 60 if self.in_minutes is not None else parse_when(self.at or "")

    def spec(self, now: float, session_key: str) -> JobSpec:
        due = dt.datetime.fromtimestamp(self.due_at(now), dt.timezone.utc).isoformat()
        return JobSpec(
            schedule=At(at=due), payload=Reminder(text=self.text), target=target_of_session(session_key)
        )


def _confirm_reminder(args: SetReminderArgs) -> str:
    due = utc_text(args.due_at(time.time()))
    when = f"in {args.in_minutes} min, about {due}" if args.in_minutes is not None else due
    return f"Set a reminder for {when}:\n{args.text}"


@tool(
    "set_reminder",
    Level.WRITE,
    SetReminderArgs,
    confirmation=_confirm_reminder,
    description="""
Remind the user in this chat later: give in_minutes (1-525600) or at (ISO-8601 with a timezone).""",
)
async def set_reminder(ctx: ToolContext, args: SetReminderArgs) -> ToolOutput:
    due = args.due_at(time.time())
    saved = add_job(ctx, args.spec(time.time(), ctx.session_key))
    return ToolOutput(
        f"Reminder {saved.id} set for {utc_text(due)}.", untrusted=False, data={"id": saved.id, "due_at": due}
    )


@tool("list_reminders", Level.READ, NoArgs, description="This chat's pending reminders, soonest first.")
async def list_reminders(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    now = time.time()
    with job_store(ctx) as store:
        found = [
            (next_fire(j.spec, j.created_at, "UTC", after=max(j.watermark, now)), j)
            for j in store.active(ctx.session_key)
            if isinstance(j.spec.payload, Reminder)
        ]
    items = sorted(
        ((due, j) for due, j in found if due is not None), key=lambda pair: (pair[0], pair[1].created_at)
    )
    if not items:
        return ToolOutput("No pending reminders in this chat.", untrusted=False, data={"reminders": []})
    lines = [f"{j.id} {utc_text(due)}: {j.spec.payload.text}" for due, j in items]  # type: ignore[union-attr]
    data = {"reminders": [{"id": j.id, "due_at": int(due)} for due, j in items]}
    return ToolOutput("\n".join(lines), untrusted=True, data=data)


REMINDER_TOOLS = (set_reminder, list_reminders)
