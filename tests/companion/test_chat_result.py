"""From chat to companion and back: `/send` over the limit escalates, the companion approves with the
main key, the signer broadcasts, and the chat is told the outcome with the tx hash."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.channels.base import Inbound
from bot.notify import Notifier
from bot.runtime.signer_watch import SignerWatch
from companion_bridge.companion.client import Choice
from tests.bot.agent.conftest import attach_bot, llm  # noqa: F401 - fixture
from tests.bot.agent.test_cancel_and_pair import Sink
from tests.companion.conftest import MAIN_PASS, request_for
from tests.conftest import FRIEND, balance

pytestmark = [pytest.mark.chain]


def test_chat_sees_the_companion_approved_transfer_land(tier1, llm, anvil) -> None:  # noqa: F811
    harness = attach_bot(tier1.stack, llm)

    async def scenario() -> list[tuple[str, str]]:
        companion = await tier1.paired()
        runtime = harness.runtime()
        told: list[tuple[str, str]] = []

        async def console(chat: str, text: str) -> None:
            told.append((chat, text))

        notifier = Notifier("console:owner")
        notifier.register("console", console)
        watch = SignerWatch(runtime, notifier, first_delay=0.1, max_delay=0.2)
        await watch.start()
        try:
            before = balance(anvil, FRIEND)
            sink = Sink()
            await runtime.core.handle(
                Inbound("console", "owner", f"m-{time.time_ns()}", f"/send {FRIEND} 0.02eth"), sink)
            pending = next(e for e in runtime.events.poll(0, limit=1000, type="signer") if e.name == "sign.outcome")
            assert pending.data["status"] == "pending_approval"
            request = await request_for(companion, pending.data["request_id"])
            result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            deadline = time.monotonic() + 15
            while not any("approved on your companion" in text for _, text in told):
                assert time.monotonic() < deadline, told
                await asyncio.sleep(0.05)
            while balance(anvil, FRIEND) == before:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert balance(anvil, FRIEND) - before == 2 * 10**16
            final = next(text for _, text in told if "approved on your companion" in text)
            assert result["tx_hash"] in final and companion.wallet.device_id in final
            assert any("waiting for your companion app" in text for _, text in told)
            return told
        finally:
            await watch.stop()
            await companion.close()
            await runtime.close()

    told = asyncio.run(asyncio.wait_for(scenario(), 90))
    assert all(chat == "owner" for chat, _ in told)
