"""What a scheduled job is: a schedule, a payload and where its result goes, validated once.

Jobs are stored as this JSON (never pickled callables, which would make the job store a code
execution path) and turned into APScheduler triggers when loaded. Schedules are bounded so nothing
fires more than once a minute, and every time has an explicit timezone: "09:00" means something
different on the user's phone and on the server.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal, Union
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from policies.kernel.text import display_safe_lines

MIN_EVERY_SECONDS = 60
MAX_EVERY_SECONDS = 366 * 86400
MAX_AHEAD_SECONDS = 366 * 86400
MAX_TEXT = 500
MAX_PROMPT = 4000
TARGET_PATTERN = r"^[a-z][a-z0-9_-]{0,31}:[^\s:]{1,128}$"
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_when(text: str) -> int:
    """ISO-8601 with a timezone ("2026-05-01T09:00+02:00", "...Z") -> UTC epoch seconds."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("`at` must be ISO-8601, e.g. 2026-05-01T09:00:00+02:00") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("`at` needs a timezone offset (e.g. +02:00 or Z); a bare time is ambiguous")
    try:
        return int(moment.timestamp())
    except (OverflowError, ValueError, OSError):
        raise ValueError("`at` is out of range") from None


def utc_text(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown timezone {name!r} (use an IANA name such as Europe/Berlin)") from None


def crontab_weekdays(field: str) -> str:
    """Standard crontab weekday numbers (0 or 7 = Sunday) as names: APScheduler 3 counts 0 as Monday,
    so passing numbers through would shift every weekly job by a day."""
    out: list[str] = []
    for token in field.lower().split(","):
        if "/" in token:
            raise ValueError("steps (/) in the weekday field are not supported; list the days")
        if not any(c.isdigit() for c in token):
            out.append(token)
            continue
        low, _, high = token.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"bad weekday {token!r}") from None
        if not (0 <= first <= 7 and 0 <= last <= 7 and first <= last):
            raise ValueError(f"bad weekday {token!r} (0-7, 0 and 7 are Sunday)")
        out.extend(_WEEKDAYS[i] for i in range(first, last + 1))
    return ",".join(dict.fromkeys(out))


class At(_Model):
    kind: Literal["at"] = "at"
    at: str = Field(max_length=40, description="ISO-8601 with a timezone offset")

    @field_validator("at")
    @classmethod
    def _valid(cls, value: str) -> str:
        parse_when(value)
        return value

    @property
    def epoch(self) -> int:
        return parse_when(self.at)


class Every(_Model):
    kind: Literal["every"] = "every"
    seconds: int = Field(ge=MIN_EVERY_SECONDS, le=MAX_EVERY_SECONDS)


class Cron(_Model):
    kind: Literal["cron"] = "cron"
    expr: str = Field(max_length=120, description="5-field crontab: minute hour day month weekday")

    @field_validator("expr")
    @classmethod
    def _valid(cls, value: str) -> str:
        cron_trigger(value, "UTC")
        return " ".join(value.split())


Schedule = Annotated[Union[At, Every, Cron], Field(discriminator="kind")]


def _text(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("the text is empty")
    return display_safe_lines(
        value
    )  # shown in a confirmation, then run later as if typed: all of it must show


ShortText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT), AfterValidator(_text)]
LongText = Annotated[str, Field(min_length=1, max_length=MAX_PROMPT), AfterValidator(_text)]


class Reminder(_Model):
    """Delivered as is: no model involved."""

    kind: Literal["reminder"] = "reminder"
    text: ShortText


class SystemEvent(_Model):
    """Put into the main chat's session as a marked system event; the model answers there (read tools)."""

    kind: Literal["systemEvent"] = "systemEvent"
    text: LongText


class AgentTurn(_Model):
    """An isolated run (session `cron:<job id>`, read tools only); its reply is delivered to the target."""

    kind: Literal["agentTurn"] = "agentTurn"
    prompt: LongText


class ClaimJob(_Model):
    """Run the `claim` tool with these stored arguments, no model involved (`owlia cron add --claim`,
    the owner only). The signer decides as for any claim: it pays only the claiming account, and an
    unattended request follows the policy's `sources.heartbeat`."""

    kind: Literal["claim"] = "claim"
    distributor: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_.:\-]+$")
    proof: str = Field(min_length=1, max_length=500, description="a file in the workspace, or an http(s) URL")
    chain_id: int | None = Field(default=None, gt=0)

    @field_validator("proof")
    @classmethod
    def _proof(cls, value: str) -> str:
        if any(ord(c) < 32 or c.isspace() for c in value):
            raise ValueError("the proof's file or URL has no spaces or control characters")
        return value


Payload = Annotated[Union[Reminder, SystemEvent, AgentTurn, ClaimJob], Field(discriminator="kind")]


class JobSpec(_Model):
    name: str = Field(default="", max_length=80)
    schedule: Schedule
    payload: Payload
    target: str | None = Field(default=None, pattern=TARGET_PATTERN)  # default: notify.default_target
    timezone: str | None = Field(default=None, max_length=64)  # for cron schedules; default: cron.timezone

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None:
            zone(value)
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if any(ord(c) < 32 for c in value):
            raise ValueError("control characters are not allowed")
        return value.strip()

    def check_window(self, now: float) -> None:
        """An `at` must be in the future and within a year; checked when a job is created."""
        if isinstance(self.schedule, At):
            due = self.schedule.epoch
            if due <= now:
                raise ValueError(f"{utc_text(due)} is in the past")
            if due > now + MAX_AHEAD_SECONDS:
                raise ValueError("a job can be at most one year ahead")

    def describe_schedule(self, default_tz: str) -> str:
        schedule = self.schedule
        if isinstance(schedule, At):
            return f"once at {utc_text(schedule.epoch)}"
        if isinstance(schedule, Every):
            return f"every {_duration(schedule.seconds)}"
        return f"cron '{schedule.expr}' ({self.timezone or default_tz})"

    def describe_payload(self) -> str:
        payload = self.payload
        if isinstance(payload, Reminder):
            return f"send the reminder: {payload.text}"
        if isinstance(payload, SystemEvent):
            return f"system event into the main chat: {payload.text}"
        if isinstance(payload, ClaimJob):
            return (
                f"claim from {payload.distributor} with the proof in {payload.proof} (the signer decides; "
                "the tokens go only to the claiming account)"
            )
        return f"run the assistant (read-only tools) on: {payload.prompt}"


def _duration(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def parse_duration(text: str) -> int:
    """'90s', '15m', '2h', '1d' or plain seconds -> seconds."""
    text = text.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        if text and text[-1] in units:
            return int(text[:-1]) * units[text[-1]]
        return int(text)
    except ValueError:
        raise ValueError(f"bad duration {text!r}; use e.g. 90s, 15m, 2h, 1d") from None


def cron_trigger(expr: str, tz: str):
    from apscheduler.triggers.cron import CronTrigger  # lazy: 39 ms, 9612 KiB

    fields = expr.split()
    if len(fields) != 5:
        raise ValueError("a cron schedule has 5 fields: minute hour day month weekday")
    fields[4] = crontab_weekdays(fields[4])
    try:
        return CronTrigger(
            minute=fields[0],
            hour=fields[1],
            day=fields[2],
            month=fields[3],
            day_of_week=fields[4],
            timezone=zone(tz),
        )
    except ValueError as exc:
        raise ValueError(f"bad cron expression: {exc}") from None


def make_trigger(spec: JobSpec, created_at: float, default_tz: str):
    """The APScheduler trigger for a job; `every` counts from the job's creation, not from start-up."""
    from apscheduler.triggers.date import DateTrigger  # lazy: 39 ms, 9400 KiB (2 imports)
    from apscheduler.triggers.interval import IntervalTrigger

    schedule = spec.schedule
    tz = zone(spec.timezone or default_tz)
    if isinstance(schedule, At):
        return DateTrigger(run_date=dt.datetime.fromtimestamp(schedule.epoch, dt.timezone.utc), timezone=tz)
    if isinstance(schedule, Every):
        start = dt.datetime.fromtimestamp(created_at + schedule.seconds, dt.timezone.utc)
        return IntervalTrigger(seconds=schedule.seconds, start_date=start, timezone=tz)
    return cron_trigger(schedule.expr, spec.timezone or default_tz)


def fire_after(trigger, moment: dt.datetime) -> dt.datetime | None:
    """The trigger's first fire time strictly after `moment` (None: it never fires again)."""
    from apscheduler.triggers.date import DateTrigger  # lazy: 40 ms, 9420 KiB

    if isinstance(trigger, DateTrigger):
        return trigger.run_date if trigger.run_date > moment else None
    return trigger.get_next_fire_time(None, moment + dt.timedelta(microseconds=1))


def build_schedule(
    at: str | None = None, every_seconds: int | None = None, cron: str | None = None
) -> Schedule:
    """Exactly one of the three, as typed by a person or a model (the CLI and the tools share this)."""
    given = [x for x in (at, every_seconds, cron) if x is not None]
    if len(given) != 1:
        raise ValueError("give exactly one schedule: at, every or cron")
    if at is not None:
        return At(at=at)
    if every_seconds is not None:
        return Every(seconds=every_seconds)
    return Cron(expr=cron or "")


def next_fire(spec: JobSpec, created_at: float, default_tz: str, after: float | None = None) -> float | None:
    """When a job created at `created_at` next fires after `after` (default: its creation)."""
    moment = fire_after(
        make_trigger(spec, created_at, default_tz),
        dt.datetime.fromtimestamp(created_at if after is None else after, dt.timezone.utc),
    )
    return moment.timestamp() if moment is not None else None
