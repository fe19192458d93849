"""A question in flight when the bot stops is apologised for after the restart, once, in its chat.

Two runs of the real Telegram channel against the local Bot API server: the first is stopped while
the model is still answering (the run is withdrawn), the second starts the service `owlia start`
runs (bot/runtime/cut_off.py) with the notifier wired as the launcher wires it."""

from __future__ import annotations

import asyncio

from bot.notify import Notifier
from bot.runtime.cut_off import CutOffReplies
from tests.bot.agent.conftest import Reply
from tests.bot.channels.telegram.conftest import OWNER, Live


def _service(live: Live) -> CutOffReplies:
    notifier = Notifier(None, live.runtime.services.state_dir)
    notifier.register("telegram", live.channel.send_text)
    return CutOffReplies(live.runtime, notifier)


def test_a_question_cut_off_by_a_stop_is_apologised_for_once_after_the_restart(telegram):
    telegram.bot.llm.enqueue(Reply(text=["too late"], delay=4.0))

    async def asked(live: Live) -> None:
        live.tg.message(OWNER, "what is the gas price on mainnet?")
        await live.tg.until(lambda: len(live.llm.requests) == 1, 10)  # the model is working on it: stop now

    telegram.serve(asked, shutdown_grace=0.5)

    async def restarted(live: Live) -> None:
        before = len(live.tg.chat(OWNER))
        await _service(live).start()
        sorry = await live.tg.until(lambda: live.tg.chat(OWNER)[before:] or None, 10)
        assert len(sorry) == 1 and "I was restarted before I could answer" in sorry[0].text
        assert "what is the gas price on mainnet?" in sorry[0].text and "too late" not in live.replies()

    telegram.serve(restarted)

    async def again(live: Live) -> None:
        before = len(live.tg.chat(OWNER))
        await _service(live).start()
        await asyncio.sleep(
            0.5
        )  # room for a second apology after the restart: a negative, no event to wait on
        assert len(live.tg.chat(OWNER)) == before  # told once, across restarts

    telegram.serve(again)
