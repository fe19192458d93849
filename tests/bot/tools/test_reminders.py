"""Reminders: one-shot jobs in cron.db owned by their chat, timezone parsing, bounds, per-chat listing."""

from __future__ import annotations

import asyncio
import stat
import time
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from bot.scheduler.jobs import At, Every, JobSpec, Reminder
from bot.scheduler.store import MAX_JOBS_PER_OWNER, JobStore
from bot.tools.base import ToolFailure
from bot.tools.reminders import SetReminderArgs, list_reminders, parse_when, set_reminder
from tests.bot.tools.support import call, make_ctx


def test_a_reminder_is_a_one_shot_job_owned_by_its_chat(tmp_path):
    """Reminders are scheduler jobs (one mechanism): an `at` job delivering the text to this chat."""
    ctx = make_ctx(tmp_path / "ws", session="telegram:42", state_dir=tmp_path / "state")
    out = asyncio.run(call(set_reminder, ctx, text="call mom", in_minutes=5))
    with JobStore(tmp_path / "state") as store:
        [job] = store.active("telegram:42")
        assert job.id == out.data["id"] and job.origin == "agent"
        assert isinstance(job.spec.schedule, At) and job.spec.schedule.epoch == out.data["due_at"]
        assert isinstance(job.spec.payload, Reminder) and job.spec.payload.text == "call mom"
        assert job.spec.target == "telegram:42"
        assert store.remove(job.id, owner="telegram:99") is False  # another chat cannot cancel it
    assert stat.S_IMODE((tmp_path / "state" / "cron.db").stat().st_mode) == 0o600


def test_the_per_chat_bound_is_shared_with_other_jobs(tmp_path):
    ctx = make_ctx(tmp_path / "ws", session="telegram:42", state_dir=tmp_path / "state")
    with JobStore(tmp_path / "state") as store:
        for _ in range(MAX_JOBS_PER_OWNER):
            store.add(
                JobSpec(schedule=Every(seconds=3600), payload=Reminder(text="x")),
                owner="telegram:42",
                origin="agent",
            )
    with pytest.raises(ToolFailure, match="limit"):
        asyncio.run(call(set_reminder, ctx, text="one too many", in_minutes=5))
    other = make_ctx(tmp_path / "ws", session="telegram:43", state_dir=tmp_path / "state")
    asyncio.run(call(set_reminder, other, text="another chat is not affected", in_minutes=5))


def test_timezone_parsing():
    seven_utc = int(datetime(2030, 1, 1, 7, tzinfo=timezone.utc).timestamp())
    assert parse_when("2030-01-01T09:00:00+02:00") == seven_utc
    assert parse_when("2030-01-01T07:00:00Z") == parse_when("2030-01-01T07:00:00+00:00")
    with pytest.raises(ValueError, match="timezone"):
        parse_when("2030-01-01T09:00:00")
    with pytest.raises(ValueError, match="ISO-8601"):
        parse_when("tomorrow at nine")


def _soon(minutes: int, offset_hours: int) -> str:
    tz = timezone(timedelta(hours=offset_hours))
    return (datetime.now(tz) + timedelta(minutes=minutes)).replace(microsecond=0).isoformat()


@pytest.mark.parametrize(
    "bad",
    [
        {"text": "x", "in_minutes": 0},
        {"text": "x", "in_minutes": 525_601},
        {"text": "x"},
        {"text": "x", "in_minutes": 5, "at": "2030-01-01T09:00:00Z"},
        {"text": "x" * 501, "in_minutes": 5},
        {"text": "   ", "in_minutes": 5},
        {"text": "x", "at": "2030-01-01T09:00:00"},
        {"text": "x", "at": "2001-01-01T09:00:00Z"},
        {"text": "x", "at": "2999-01-01T09:00:00Z"},
    ],
)
def test_bounds(bad):
    with pytest.raises(ValidationError):
        SetReminderArgs.model_validate(bad)


def test_set_and_list_through_the_tools(tmp_path):
    ctx = make_ctx(tmp_path / "ws", state_dir=tmp_path / "state")
    other = make_ctx(tmp_path / "ws", session="dm:bob", state_dir=tmp_path / "state")
    at = _soon(90, offset_hours=5)
    args = SetReminderArgs(text="check the bridge", at=at)
    due_utc = datetime.fromisoformat(at).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    assert set_reminder.confirmation_text(args) == f"Set a reminder for {due_utc}:\ncheck the bridge"
    assert "in 30 min" in set_reminder.confirmation_text(SetReminderArgs(text="stretch", in_minutes=30))

    before = time.time()
    out = asyncio.run(call(set_reminder, ctx, text="stretch", in_minutes=30))
    assert -1 <= out.data["due_at"] - (before + 1800) <= 2
    asyncio.run(call(set_reminder, ctx, text="check the bridge", at=at))
    asyncio.run(call(set_reminder, other, text="bob's own", in_minutes=1))

    listed = asyncio.run(call(list_reminders, ctx))
    assert listed.content.splitlines()[0].endswith("stretch")
    assert due_utc in listed.content and "bob's own" not in listed.content
    assert listed.untrusted
    assert [line.split(": ", 1)[1] for line in listed.content.splitlines()] == ["stretch", "check the bridge"]
