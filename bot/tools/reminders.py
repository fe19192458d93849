"""Reminders: a small SQLite store the runtime polls with `due(now)`, and the tools that fill it.

Times are UTC epoch seconds in storage and an explicit timezone in every input: "9:00" without
an offset means something different on the user's phone and on the server, so it is refused.
Each session sees and adds only its own reminders, and pending ones per session are bounded.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from bot.tools.base import Level, NoArgs, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from bot.workspace.fs import FILE_MODE, PathNotAllowed, private_dir

REMINDERS_DB = "reminders.db"
MAX_TEXT = 500
MAX_MINUTES = 525_600  # one year
MAX_AHEAD_SECONDS = MAX_MINUTES * 60
MAX_PENDING_PER_SESSION = 100
PENDING, DELIVERED, CANCELLED = "pending", "delivered", "cancelled"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reminders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'cancelled'))
);
CREATE INDEX IF NOT EXISTS reminders_due ON reminders (status, due_at);
CREATE INDEX IF NOT EXISTS reminders_session ON reminders (session_key, status);
"""


@dataclass(frozen=True)
class Reminder:
    id: int
    session_key: str
    due_at: int
    text: str
    created_at: int
    status: str


def utc_text(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


class ReminderStore:
    """reminders.db (0600) in the state dir; one connection per store, used from one thread."""

    def __init__(self, state_dir: Path) -> None:
        path = private_dir(Path(state_dir)) / REMINDERS_DB
        if path.is_symlink():
            raise PathNotAllowed(f"{path} is a symlink")
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))
        os.chmod(path, FILE_MODE)
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.executescript(_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ReminderStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, params: tuple[object, ...]) -> list[Reminder]:
        return [Reminder(*row) for row in self.conn.execute(sql, params).fetchall()]

    def add(self, session_key: str, due_at: int, text: str, now: int | None = None) -> Reminder:
        created = int(time.time()) if now is None else now
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            (count,) = self.conn.execute("SELECT COUNT(*) FROM reminders WHERE session_key=? AND status=?",
                                         (session_key, PENDING)).fetchone()
            if count >= MAX_PENDING_PER_SESSION:
                raise ToolFailure(f"this chat already has {count} pending reminders; that is the limit")
            cur = self.conn.execute(
                "INSERT INTO reminders (session_key, due_at, text, created_at, status) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_key, due_at, text, created, PENDING))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return Reminder(int(cur.lastrowid or 0), session_key, due_at, text, created, PENDING)

    def due(self, now: int | float) -> list[Reminder]:
        """Pending reminders due at or before `now`, oldest due first (ties in creation order)."""
        return self._rows("SELECT id, session_key, due_at, text, created_at, status FROM reminders "
                          "WHERE status=? AND due_at<=? ORDER BY due_at, id", (PENDING, int(now)))

    def pending(self, session_key: str) -> list[Reminder]:
        return self._rows("SELECT id, session_key, due_at, text, created_at, status FROM reminders "
                          "WHERE session_key=? AND status=? ORDER BY due_at, id", (session_key, PENDING))

    def mark_delivered(self, reminder_id: int) -> bool:
        """True if it was pending; delivering twice (e.g. after a crash) is a no-op."""
        cur = self.conn.execute("UPDATE reminders SET status=? WHERE id=? AND status=?",
                                (DELIVERED, reminder_id, PENDING))
        return cur.rowcount == 1

    def cancel(self, reminder_id: int, session_key: str) -> bool:
        cur = self.conn.execute("UPDATE reminders SET status=? WHERE id=? AND session_key=? AND status=?",
                                (CANCELLED, reminder_id, session_key, PENDING))
        return cur.rowcount == 1


def reminder_store(ctx: ToolContext) -> ReminderStore:
    if ctx.services.state_dir is None:
        raise ToolFailure("reminders are not configured (the bot has no state directory)")
    return ReminderStore(ctx.services.state_dir)


def parse_when(text: str) -> int:
    """ISO-8601 with a timezone ("2026-05-01T09:00+02:00", "...Z") -> UTC epoch seconds."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("`at` must be ISO-8601, e.g. 2026-05-01T09:00:00+02:00") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("`at` needs a timezone offset (e.g. +02:00 or Z); a bare time is ambiguous")
    try:
        return int(moment.timestamp())
    except (OverflowError, ValueError, OSError):
        raise ValueError("`at` is out of range") from None


class SetReminderArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    in_minutes: int | None = Field(default=None, ge=1, le=MAX_MINUTES)
    at: str | None = Field(default=None, max_length=40, description="ISO-8601 with timezone")

    @field_validator("text")
    @classmethod
    def _printable(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("a reminder needs some text")
        if any(ord(c) < 32 and c != "\n" for c in value):
            raise ValueError("control characters are not allowed")
        return value

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
            _check_window(parse_when(self.at), time.time())
        return self

    def due_at(self, now: float) -> int:
        return int(now) + self.in_minutes * 60 if self.in_minutes is not None else parse_when(self.at or "")


def _check_window(due: int, now: float) -> None:
    if due <= now:
        raise ValueError(f"{utc_text(due)} is in the past")
    if due > now + MAX_AHEAD_SECONDS:
        raise ValueError("reminders can be at most one year ahead")


def _confirm_reminder(args: SetReminderArgs) -> str:
    due = utc_text(args.due_at(time.time()))
    when = f"in {args.in_minutes} min, about {due}" if args.in_minutes is not None else due
    return f"Set a reminder for {when}:\n{args.text}"


@tool("set_reminder", Level.WRITE, SetReminderArgs, confirmation=_confirm_reminder, description="""
Remind the user in this chat later: give in_minutes (1-525600) or at (ISO-8601 with a timezone).""")
async def set_reminder(ctx: ToolContext, args: SetReminderArgs) -> ToolOutput:
    now = time.time()
    due = args.due_at(now)
    try:
        _check_window(due, now)
    except ValueError as exc:
        raise ToolFailure(f"{exc}; nothing was set") from None
    with reminder_store(ctx) as store:
        saved = store.add(ctx.session_key, due, args.text, int(now))
    return ToolOutput(f"Reminder #{saved.id} set for {utc_text(due)}.", untrusted=False,
                      data={"id": saved.id, "due_at": due})


@tool("list_reminders", Level.READ, NoArgs, description="This chat's pending reminders, soonest first.")
async def list_reminders(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    with reminder_store(ctx) as store:
        items = store.pending(ctx.session_key)
    if not items:
        return ToolOutput("No pending reminders in this chat.", untrusted=False, data={"reminders": []})
    lines = [f"#{r.id} {utc_text(r.due_at)}: {r.text}" for r in items]
    data = {"reminders": [{"id": r.id, "due_at": r.due_at} for r in items]}
    return ToolOutput("\n".join(lines), untrusted=True, data=data)


REMINDER_TOOLS = (set_reminder, list_reminders)
