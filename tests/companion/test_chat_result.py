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
from signer.wire.sign_replies import SignReply
from tests.bot.agent.conftest import attach_bot, llm  # noqa: F401 - fixture
from tests.bot.agent.test_cancel_and_pair import Sink
from tests.companion.conftest import MAIN_PASS, request_for
from tests.conftest import FRIEND, balance

pytestmark = [pytest.mark.chain]


def signer_outcome(runtime):
    return next(e for e in runtime.events.poll(0, limit=1000, type="signer") if e.name == "sign.outcome")


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
                Inbound("console", "owner", f"m-{time.time_ns()}", f"/send {FRIEND} 0.02eth"), sink
            )
            pending = signer_outcome(runtime)
            assert pending.data["status"] == "pending_approval"
            request = await request_for(companion, pending.data["request_id"])
            result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            deadline = time.monotonic() + 15
            while not any("approved on your companion" in text.lower() for _, text in told):
                assert time.monotonic() < deadline, told
                await asyncio.sleep(0.05)
            while balance(anvil, FRIEND) == before:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert balance(anvil, FRIEND) - before == 2 * 10**16
            final = next(text for _, text in told if "approved on your companion" in text.lower())
            assert (
                result["tx_hash"][:10] in final and companion.wallet.device_id not in final
            )  # people words: no ids
            # the chat already showed the pending card: one outcome, one card (it used to come twice)
            assert not any("waiting for your companion app" in text for _, text in told)
            assert len([text for _, text in told if "approved on your companion" in text.lower()]) == 1
            return told
        finally:
            await watch.stop()
            await companion.close()
            await runtime.close()

    told = asyncio.run(asyncio.wait_for(scenario(), 90))
    assert all(chat == "owner" for chat, _ in told)


def test_a_restart_does_not_lose_the_companions_answer_nor_repeat_it(tier1, llm, anvil) -> None:  # noqa: F811
    harness = attach_bot(tier1.stack, llm)

    async def scenario() -> None:
        companion = await tier1.paired()
        told: list[str] = []

        async def console(chat: str, text: str) -> None:
            told.append(text)

        def watch_for(runtime) -> SignerWatch:
            notifier = Notifier("console:owner")
            notifier.register("console", console)
            return SignerWatch(runtime, notifier, first_delay=0.1, max_delay=0.2)

        before = harness.runtime()  # the bot before its restart: the request escalates, nobody follows it
        try:
            await before.core.handle(
                Inbound("console", "owner", f"m-{time.time_ns()}", f"/send {FRIEND} 0.02eth"), Sink()
            )
            pending = signer_outcome(before)
            ask = Inbound("console", "owner", f"m-{time.time_ns()}", "/approvals")
            listed = await before.core.handle(ask, Sink())
            assert "pending approval: send 0.02 ETH" in listed.reply  # /send's outcome is kept in the session
        finally:
            await before.close()

        after = harness.runtime()
        watch = watch_for(after)
        try:
            await watch.start()
            assert watch.watching == [pending.data["request_id"]] and told == []  # followed quietly
            request = await request_for(companion, pending.data["request_id"])
            result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            deadline = time.monotonic() + 15
            while not told:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert (
                len(told) == 1
                and "approved on your companion" in told[0].lower()
                and result["tx_hash"][:10] in told[0]
            )
            await watch.stop()
            again = watch_for(after)  # another restart: the answer was already told
            await again.start()
            # Room for an answer told twice to be told again. When the watch is right nothing happens,
            # so there is no event to wait on; load only makes the check weaker.
            await asyncio.sleep(0.5)
            await again.stop()
            assert len(told) == 1
        finally:
            await watch.stop()
            await companion.close()
            await after.close()

    asyncio.run(asyncio.wait_for(scenario(), 90))


def test_a_failed_approval_says_why_on_the_companion_and_in_the_chat(tier1, llm, anvil, tmp_path) -> None:  # noqa: F811
    """An approval whose main account cannot pay showed only the status; the reason was in `audit tail`."""
    from bot.runtime.signer_watch import describe
    from companion_bridge.companion.wallet import CompanionWallet
    from tests.companion.conftest import MAIN_PASS as PASS

    harness = attach_bot(tier1.stack, llm)
    broke = CompanionWallet.create(
        tmp_path / "broke", bytearray(PASS), scrypt_n=2**10, name="broke"
    )  # unfunded

    async def scenario() -> tuple[list[str], dict]:
        companion = await tier1.paired("broke", wallet=broke)
        runtime = harness.runtime()
        try:
            await runtime.core.handle(
                Inbound("console", "owner", f"m-{time.time_ns()}", f"/send {FRIEND} 0.02eth"), Sink()
            )
            pending = signer_outcome(runtime)
            reports: list[str] = []

            async def approve(request: dict, text: str) -> Choice:
                return (
                    Choice("approve", bytearray(PASS))
                    if request["request_id"] == pending.data["request_id"]
                    else Choice("skip")
                )

            await asyncio.wait_for(companion.run(approve, once=True, report=reports.append), 30)
            status = await runtime.services.signer.call(
                "sign.status", {"request_id": pending.data["request_id"]}
            )
            return reports, dict(status)
        finally:
            await companion.close()
            await runtime.close()

    reports, status = asyncio.run(asyncio.wait_for(scenario(), 90))
    # the node's refusal is only its word: signed and held as unconfirmed (the release rule), never "failed"
    assert status["state"] == "unconfirmed" and "insufficient funds" in status["broadcast_unknown"].lower()
    assert any("not confirmed sent" in r and "insufficient funds" in r.lower() for r in reports), reports
    told = describe(SignReply.model_validate(status))
    assert "insufficient funds" in told.lower() and "fund it" in told
