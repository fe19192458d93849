"""/cancel stops a run without waiting behind it; /pair approve works only from an owner's DM."""

from __future__ import annotations

import asyncio
import time

from bot.channels.access import open_access
from bot.channels.base import Inbound
from bot.config import load_bot_config
from bot.tools.base import ContextKind
from tests.bot.agent.conftest import Reply, attach_bot, default_bot_section


class Sink:
    def __init__(self) -> None:
        self.final: list[str] = []
        self.streamed = ""

    async def text(self, delta: str) -> None:
        self.streamed += delta

    async def notice(self, text: str) -> None:
        pass

    async def tool_event(self, event) -> None:
        pass

    async def confirm(self, prompt: str, timeout: float) -> bool:
        return False

    async def done(self, text: str) -> None:
        self.final.append(text)


def message(text: str, peer: str = "owner", n: int = 0, kind: ContextKind = ContextKind.DM) -> Inbound:
    return Inbound(
        "console",
        peer,
        f"m{n}-{time.time_ns()}",
        text,
        kind,
        chat="group1" if kind is ContextKind.GROUP else "",
    )


def test_cancel_stops_the_running_request_at_once(bot) -> None:
    bot.llm.enqueue(Reply(text=("too slow",), delay=5.0), Reply(text=("fresh answer",)))

    async def go() -> None:
        runtime = bot.runtime()
        try:
            core = runtime.core
            slow_sink, cancel_sink = Sink(), Sink()
            slow = asyncio.create_task(core.handle(message("think hard"), slow_sink))
            deadline = time.monotonic() + 20
            while not bot.requests():  # the slow request is with the model
                assert time.monotonic() < deadline, "the request never reached the model"
                await asyncio.sleep(0.02)
            started = time.monotonic()
            cancelled = await core.handle(message("/cancel", n=1), cancel_sink)
            outcome = await asyncio.wait_for(slow, 2)
            assert time.monotonic() - started < 1.0
            assert cancelled.reply == "" and cancel_sink.final == [
                ""
            ]  # the run's "Stopped." is the one message
            assert outcome.status == "cancelled" and slow_sink.final == ["Stopped."]
            assert "too slow" not in slow_sink.streamed
            idle = await core.handle(message("/cancel", n=2), Sink())
            assert idle.reply == "Nothing is running."
        finally:
            await runtime.close()

    asyncio.run(go())


def test_pair_approve_only_from_an_owner_dm(stack, llm) -> None:
    harness = attach_bot(stack, llm)
    harness.configure(default_bot_section(llm, pairing={"owners": ["console:owner"]}))
    store = open_access(stack.home, load_bot_config(stack.home).bot.pairing)
    request = store.request("telegram", "555", "newcomer")
    store.close()
    assert request is not None

    async def go() -> None:
        runtime = harness.runtime()
        try:
            core = runtime.core
            stranger = await core.handle(message(f"/pair approve {request.code}", peer="guest"), Sink())
            assert stranger.reply.startswith("Unknown command /pair")
            group = await core.handle(
                message(f"/pair approve {request.code}", n=1, kind=ContextKind.GROUP), Sink()
            )
            assert group.reply.startswith("Unknown command /pair")
            owner = await core.handle(message(f"/pair approve {request.code}", n=2), Sink())
            assert owner.reply == "Paired telegram:555 (newcomer)."
        finally:
            await runtime.close()

    asyncio.run(go())
    store = open_access(stack.home, load_bot_config(stack.home).bot.pairing)
    try:
        assert store.is_paired("telegram", "555") and store.grants()[0].approved_by == "console:owner"
    finally:
        store.close()
