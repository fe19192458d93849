"""A cancelled, failed or interrupted request never reaches the model again as a live request.

Before: the cancelled text stayed in the session and was merged into the next turn, so the model
received 'Send 0.003 ETH to 0x7099…\\n\\nnever mind. how are you?' unmarked; a request cut off by a
restart came back the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from bot.channels.base import Inbound
from bot.tools.base import ContextKind
from tests.bot.agent.conftest import Reply
from tests.bot.agent.test_cancel_and_pair import Sink

TRANSFER = "Send 0.003 ETH to 0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


class NoticeSink(Sink):
    def __init__(self) -> None:
        super().__init__()
        self.notices: list[str] = []

    async def notice(self, text: str) -> None:
        self.notices.append(text)


def message(text: str, n: int) -> Inbound:
    return Inbound("console", "owner", f"w{n}-{time.time_ns()}", text, ContextKind.DM)


def sent_text(request) -> str:
    return json.dumps(request.body["messages"])


def test_a_cancelled_request_replays_as_withdrawn(bot) -> None:
    bot.llm.enqueue(Reply(text=("working on it",), delay=5.0), Reply(text=("I'm fine",)))

    async def go() -> None:
        runtime = bot.runtime()
        try:
            slow = asyncio.create_task(runtime.core.handle(message(TRANSFER, 0), Sink()))
            while not bot.llm.requests:  # the run is waiting on the model
                await asyncio.sleep(0.02)
            await runtime.core.handle(message("/cancel", 1), Sink())
            await asyncio.wait_for(slow, 3)
            answered = await runtime.core.handle(message("never mind. how are you?", 2), Sink())
            assert answered.reply == "I'm fine"
        finally:
            await runtime.close()

    asyncio.run(go())
    second = sent_text(bot.llm.requests[-1])
    assert "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" not in second and "0.003" not in second
    assert "withdrawn: the user cancelled this request" in second and "never mind. how are you?" in second


def test_a_request_the_model_failed_on_is_not_merged_into_the_next(bot) -> None:
    bot.llm.enqueue(Reply(status=400, error_type="invalid_request_error"), Reply(text=("hello",)))

    async def go() -> None:
        runtime = bot.runtime()
        try:
            await runtime.core.handle(message(TRANSFER, 0), Sink())
            await runtime.core.handle(message("hi", 1), Sink())
        finally:
            await runtime.close()

    asyncio.run(go())
    last = sent_text(bot.llm.requests[-1])
    assert "0.003" not in last and "withdrawn: this request failed" in last


CHILD = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from bot.channels.base import Inbound
    from bot.config import load_bot_config
    from bot.runtime.assemble import build_runtime
    from bot.runtime.llm_pool import Secret
    from bot.tools.base import ContextKind

    async def lookup(name):
        return Secret("api_key", "sk-ant-api03-" + "t" * 40) if name == "anthropic" else None

    class Quiet:
        async def text(self, d): pass
        async def notice(self, t): pass
        async def tool_event(self, e): pass
        async def confirm(self, p, t): return False
        async def done(self, t): pass

    async def main():
        home = Path(sys.argv[1])
        runtime = build_runtime(home, load_bot_config(home), lookup=lookup)
        await runtime.core.handle(Inbound("console", "owner", "k1", sys.argv[2], ContextKind.DM), Quiet())

    asyncio.run(main())
""")


def test_a_request_cut_off_by_a_crash_is_withdrawn_and_the_user_told(bot) -> None:
    bot.llm.enqueue(Reply(text=("too late",), delay=30.0), Reply(text=("hello again",)))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(bot.home), TRANSFER],
        cwd=os.getcwd(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not bot.llm.requests:
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never asked the model"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)  # the bot dies mid-run, as in a crash or an OOM kill
        child.wait(10)

    sinks: list[NoticeSink] = [NoticeSink(), NoticeSink()]

    async def go() -> None:
        runtime = bot.runtime()
        try:
            await runtime.core.handle(message("hi", 1), sinks[0])
            await runtime.core.handle(message("and again", 2), sinks[1])
        finally:
            await runtime.close()

    asyncio.run(go())
    told = [n for n in sinks[0].notices if "cut off by a restart" in n]
    assert len(told) == 1 and "Send 0.003 ETH" in told[0]
    assert not any("cut off by a restart" in n for n in sinks[1].notices)  # told once
    replay = sent_text(bot.llm.requests[1])
    assert "0.003" not in replay and "interrupted by a restart" in replay


def test_a_request_cut_off_by_a_crash_is_apologised_for_at_start_not_again_at_the_next_message(bot) -> None:
    """bot/runtime/cut_off.py at start: the chat hears it without writing first, and only once."""
    from bot.notify import Notifier
    from bot.runtime.cut_off import CutOffReplies

    bot.llm.enqueue(Reply(text=("too late",), delay=30.0), Reply(text=("hello again",)))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(bot.home), TRANSFER],
        cwd=os.getcwd(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not bot.llm.requests:
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never asked the model"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    delivered: list[tuple[str, str]] = []

    async def deliver(chat: str, text: str) -> None:  # the channel's send_text, as the launcher registers it
        delivered.append((chat, text))

    sink = NoticeSink()

    async def go() -> None:
        runtime = bot.runtime()
        notifier = Notifier(None, runtime.services.state_dir)
        notifier.register("console", deliver)
        try:
            await CutOffReplies(runtime, notifier).start()
            await runtime.core.handle(message("hi", 1), sink)
        finally:
            await runtime.close()

    asyncio.run(go())
    [(chat, text)] = delivered
    assert chat == "owner" and "I was restarted before I could answer" in text and "Send 0.003 ETH" in text
    assert not any("cut off by a restart" in n for n in sink.notices)  # said once, at start
