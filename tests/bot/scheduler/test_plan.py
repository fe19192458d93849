"""The misfire policy as a pure function, and the schedule validation it relies on."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from bot.scheduler.jobs import Cron, Every, JobSpec, Reminder, crontab_weekdays, make_trigger, next_fire
from bot.scheduler.plan import MAX_CATCHUP_RUNS, MAX_COUNT, WAKE_SLACK_SECONDS, _fires, plan_fires

UTC = dt.timezone.utc
T0 = dt.datetime(2030, 1, 1, tzinfo=UTC)


def every(seconds: int):
    return make_trigger(
        JobSpec(schedule=Every(seconds=seconds), payload=Reminder(text="x")), T0.timestamp(), "UTC"
    )


@settings(max_examples=150, deadline=None)
@given(
    interval=st.integers(60, 7200),
    down=st.integers(0, 60_000),
    grace=st.integers(0, 86400),
    coalesce=st.booleans(),
)
def test_every_fire_is_run_coalesced_or_missed_exactly_once(interval, down, grace, coalesce):
    trigger = every(interval)
    now = T0 + dt.timedelta(seconds=down)
    plan = plan_fires(trigger, T0, now, grace, coalesce)
    total = len(_fires(trigger, T0, now))
    assert len(plan.runs) + plan.coalesced + plan.missed == total
    assert len(plan.runs) <= (1 if coalesce else MAX_CATCHUP_RUNS)
    window = max(grace, WAKE_SLACK_SECONDS)
    assert all(now - r <= dt.timedelta(seconds=window) for r in plan.runs)  # nothing older than grace runs
    if plan.last_missed is not None:
        assert now - plan.last_missed > dt.timedelta(seconds=window)
    assert plan.next_fire is not None and plan.next_fire > now
    # handled fires never come back: planning again from `now` finds nothing due
    again = plan_fires(trigger, now, now, grace, coalesce)
    assert (again.runs, again.missed) == ([], 0)


def test_cron_in_a_timezone_and_standard_weekday_numbers():
    spec = JobSpec(
        schedule=Cron(expr="0 9 * * 1-5"), payload=Reminder(text="standup"), timezone="Europe/Berlin"
    )
    saturday = dt.datetime(2030, 1, 5, 12, tzinfo=UTC).timestamp()  # 2030-01-05 is a Saturday
    first = dt.datetime.fromtimestamp(next_fire(spec, saturday, "UTC"), UTC)
    assert first == dt.datetime(2030, 1, 7, 8, tzinfo=UTC)  # Monday 09:00 in Berlin (winter, UTC+1)
    assert crontab_weekdays("0,7") == "sun" and crontab_weekdays("5-6") == "fri,sat"


@pytest.mark.parametrize(
    "bad",
    [
        {"schedule": {"kind": "every", "seconds": 59}, "payload": {"kind": "reminder", "text": "x"}},
        {"schedule": {"kind": "cron", "expr": "* * * *"}, "payload": {"kind": "reminder", "text": "x"}},
        {"schedule": {"kind": "cron", "expr": "61 * * * *"}, "payload": {"kind": "reminder", "text": "x"}},
        {"schedule": {"kind": "cron", "expr": "0 9 * * */2"}, "payload": {"kind": "reminder", "text": "x"}},
        {
            "schedule": {"kind": "at", "at": "2030-01-01T09:00:00"},
            "payload": {"kind": "reminder", "text": "x"},
        },
        {"schedule": {"kind": "every", "seconds": 60}, "payload": {"kind": "reminder", "text": "  "}},
        {"schedule": {"kind": "every", "seconds": 60}, "payload": {"kind": "reminder", "text": "x\x1b[2J"}},
        {"schedule": {"kind": "every", "seconds": 60}, "payload": {"kind": "shell", "text": "rm -rf"}},
        {
            "schedule": {"kind": "every", "seconds": 60},
            "payload": {"kind": "reminder", "text": "x"},
            "timezone": "Mars/Base",
        },
        {
            "schedule": {"kind": "every", "seconds": 60},
            "payload": {"kind": "reminder", "text": "x"},
            "target": "tg 1",
        },
        {
            "schedule": {"kind": "every", "seconds": 60},
            "payload": {"kind": "reminder", "text": "x"},
            "extra": 1,
        },
    ],
)
def test_bad_specs_are_refused(bad):
    with pytest.raises(ValidationError):
        JobSpec.model_validate(bad)


@given(st.integers(min_value=-(10**6), max_value=59))
def test_nothing_repeats_faster_than_a_minute(seconds):
    with pytest.raises(ValidationError):
        Every(seconds=seconds)


def test_a_month_of_downtime_is_planned_quickly_and_counted_up_to_the_bound():
    import time

    trigger = make_trigger(
        JobSpec(schedule=Cron(expr="* * * * *"), payload=Reminder(text="x")), T0.timestamp(), "UTC"
    )
    started = time.perf_counter()
    plan = plan_fires(trigger, T0, T0 + dt.timedelta(days=30), 7 * 86400, True)
    assert time.perf_counter() - started < 2.0  # ~0.3 s here; bounded by MAX_COUNT, not by the downtime
    assert (plan.missed, len(plan.runs), plan.coalesced) == (MAX_COUNT, 1, MAX_COUNT - 1)
    assert plan.runs[0] == T0 + dt.timedelta(days=30)  # the latest fire runs, not the oldest counted one
