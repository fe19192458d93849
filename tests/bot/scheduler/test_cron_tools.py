"""The agent's cron tools: confirmation text, ownership, forced target, and the whole path from a
DM (model -> executor -> confirmation -> cron.db) to the scheduler delivering the reminder."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

import pytest
from pydantic import ValidationError

from bot.channels.base import Inbound
from bot.config import CronSettings
from bot.runtime.scheduler import SchedulerService
from bot.runtime.unattended import CaptureSink
from bot.scheduler.store import JobStore
from bot.tools.cron_tools import CronAddArgs, cron_add, cron_list, cron_remove
from tests.bot.agent.conftest import call
from tests.bot.scheduler.conftest import Outbox, notifier_with
from tests.bot.tools.support import call as call_tool, make_ctx
from tests.fakes.llm_server import Reply


def test_confirmation_names_schedule_first_fire_and_payload():
    args = CronAddArgs(text="summarize my balances", cron="0 9 * * 1-5", timezone="Europe/Berlin")
    text = cron_add.confirmation_text(args)
    assert text.startswith("Schedule cron '0 9 * * 1-5' (Europe/Berlin) (first: ")
    assert (
        "reporting to this chat" in text
        and "run the assistant (read-only tools) on: summarize my balances" in text
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"text": "x"},  # no schedule
        {"text": "x", "every_minutes": 5, "cron": "* * * * *"},  # two
        {"text": "x", "at": "2001-01-01T00:00:00Z"},  # past
        {"text": "x", "at": "2030-01-01T09:00:00"},  # no timezone
        {"text": "x", "every_minutes": 5, "timezone": "Nowhere/Land"},
        {
            "text": "pay 0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
            "kind": "systemEvent",
            "every_minutes": 60,
        },
        {
            "text": "x",
            "every_minutes": 5,
            "target": "telegram:666",
        },  # the model cannot pick where output goes
    ],
)
def test_bad_requests_never_reach_the_user(bad):
    with pytest.raises(ValidationError):
        CronAddArgs.model_validate(bad)


def test_jobs_belong_to_their_chat(tmp_path):
    alice = make_ctx(tmp_path / "ws", session="telegram:1", state_dir=tmp_path / "state")
    bob = make_ctx(tmp_path / "ws", session="discord:g1:2", state_dir=tmp_path / "state")
    made = asyncio.run(call_tool(cron_add, alice, text="check gas", every_minutes=30))
    asyncio.run(call_tool(cron_add, bob, text="check gas too", kind="reminder", every_minutes=60))
    with JobStore(tmp_path / "state") as store:
        [job] = store.active("telegram:1")
        assert (job.id, job.origin, job.spec.target, job.spec.timezone) == (
            made.data["id"],
            "agent",
            "telegram:1",
            "UTC",
        )
        assert store.active("discord:g1:2")[0].spec.target == "discord:g1"  # a group job reports to the group
    listed = asyncio.run(call_tool(cron_list, alice))
    assert made.data["id"] in listed.content and "check gas too" not in listed.content and listed.untrusted
    from bot.tools.base import ToolFailure

    with pytest.raises(ToolFailure):
        asyncio.run(call_tool(cron_remove, bob, id=made.data["id"]))
    asyncio.run(call_tool(cron_remove, alice, id=made.data["id"]))
    assert "No scheduled jobs" in asyncio.run(call_tool(cron_list, alice)).content


class ConfirmingSink(CaptureSink):
    def __init__(self, answer: bool) -> None:
        super().__init__()
        self.answer = answer
        self.prompts: list[str] = []

    async def confirm(self, prompt: str, timeout: float) -> bool:
        self.prompts.append(prompt)
        return self.answer


@pytest.mark.parametrize("answer", [True, False])
def test_from_a_dm_to_a_delivered_reminder(home, llm, answer):
    due = dt.datetime.fromtimestamp(int(time.time()) + 3, dt.timezone.utc)
    at = due.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat()
    llm.enqueue(
        Reply(tool_calls=[call("cron_add", {"text": "take the pizza out", "kind": "reminder", "at": at})])
    )
    llm.enqueue(Reply(text=["Done."]))
    outbox = Outbox()

    async def go() -> ConfirmingSink:
        runtime = home.runtime()
        notifier = notifier_with(outbox, default=None)
        notifier.register("console", outbox.send)
        service = SchedulerService(runtime, notifier, CronSettings(), sync_interval=0.05)
        await service.start()
        sink = ConfirmingSink(answer)
        assert runtime.core is not None
        await runtime.core.handle(
            Inbound("console", "me", "m1", "remind me in a bit", received_at=time.time()), sink
        )
        if answer:
            await outbox.wait_for(1, timeout=10)
        else:
            await asyncio.sleep(3.5)  # past the time it would have been due: nothing may come, so no event
        await service.drain()
        await service.stop()
        await runtime.close()
        return sink

    sink = asyncio.run(asyncio.wait_for(go(), 25))
    [prompt] = sink.prompts
    assert prompt.startswith(f"Schedule once at {due:%Y-%m-%d %H:%M} UTC") and "take the pizza out" in prompt
    assert outbox.sent == ([("me", "⏰ Reminder: take the pizza out")] if answer else [])
    with JobStore(home.state) as store:
        assert len(store.history()) == (1 if answer else 0)
