"""Reminders: the store's due ordering, timezone parsing, bounds, and per-session listing."""

from __future__ import annotations

import asyncio
import stat
import time
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from bot.tools.reminders import ReminderStore, SetReminderArgs, list_reminders, parse_when, set_reminder
from tests.bot.tools.support import call, make_ctx


def test_due_orders_by_time_and_skips_future_and_delivered(tmp_path):
    with ReminderStore(tmp_path / "state") as store:
        late = store.add("a", 300, "third", now=1)
        first = store.add("b", 100, "first", now=2)
        tie = store.add("a", 100, "second (same time, created later)", now=3)
        store.add("a", 10_000, "future", now=4)
        assert [r.id for r in store.due(300)] == [first.id, tie.id, late.id]
        assert [r.text for r in store.due(150)] == ["first", "second (same time, created later)"]
        assert store.mark_delivered(first.id) and not store.mark_delivered(first.id)
        assert [r.id for r in store.due(300)] == [tie.id, late.id]
        assert store.cancel(late.id, "a") and not store.cancel(tie.id, "b")  # not b's reminder
        assert [r.id for r in store.due(300)] == [tie.id]
    assert stat.S_IMODE((tmp_path / "state" / "reminders.db").stat().st_mode) == 0o600


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


@pytest.mark.parametrize("bad", [
    {"text": "x", "in_minutes": 0},
    {"text": "x", "in_minutes": 525_601},
    {"text": "x"},
    {"text": "x", "in_minutes": 5, "at": "2030-01-01T09:00:00Z"},
    {"text": "x" * 501, "in_minutes": 5},
    {"text": "   ", "in_minutes": 5},
    {"text": "x", "at": "2030-01-01T09:00:00"},
    {"text": "x", "at": "2001-01-01T09:00:00Z"},
    {"text": "x", "at": "2999-01-01T09:00:00Z"},
])
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
    with ReminderStore(tmp_path / "state") as store:
        assert [r.text for r in store.due(time.time() + 3600)] == ["bob's own", "stretch"]
