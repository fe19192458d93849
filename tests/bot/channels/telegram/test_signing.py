"""Transfers from a Telegram DM through the real signer to anvil: the user sees the signer's own
decoded summary and the outcome (tx hash and explorer link, or the rule that denied it)."""

from __future__ import annotations

import asyncio

import pytest

from tests.bot.agent.conftest import Reply, call
from tests.bot.channels.telegram.conftest import OWNER, Live
from tests.conftest import FRIEND, STRANGER, balance, wait_receipt

pytestmark = pytest.mark.chain
EXPLORER = "https://explorer.example/tx/{hash}"


def card(live: Live, marker: str):
    return next((m for m in live.tg.chat(OWNER) if marker in m.text), None)


def test_a_transfer_in_a_dm_is_signed_and_lands_on_chain(telegram_signer, anvil):
    before = balance(anvil, FRIEND)
    telegram_signer.bot.llm.enqueue(
        Reply(text=["Sending now."],
              tool_calls=[call("transfer", {"to": FRIEND, "amount": "0.001", "reason": "lunch"})]),
        Reply(text=["Done, it is on its way."]))

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, f"send 0.001 ETH to {FRIEND}")
        signed = await live.tg.until(lambda: card(live, "SIGNED"), 30)
        await live.tg.until(lambda: "Done, it is on its way." in live.replies(), 10)
        assert "send 0.001 ETH to dev-friend" in signed.text  # the signer's reading, not the model's
        tx_hash = signed.text.split("tx ", 1)[1].split()[0]
        assert signed.raw.count(f'href="https://explorer.example/tx/{tx_hash}"') == 1
        receipt = await asyncio.to_thread(wait_receipt, anvil, tx_hash)
        assert int(receipt["status"], 16) == 1
        texts = live.replies()
        assert texts.index("Sending now.") < texts.index(signed.text) < texts.index("Done, it is on its way.")

    telegram_signer.serve(scenario, explorers={31337: EXPLORER})
    assert balance(anvil, FRIEND) - before == 10**15


def test_a_new_recipient_waits_for_the_companion_and_a_lookalike_is_denied(telegram_signer, anvil):
    lookalike = FRIEND[:6] + "0" * 32 + FRIEND[-4:]
    telegram_signer.bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": STRANGER, "amount": "0.001"})]),
        Reply(text=["Needs your approval."]),
        Reply(tool_calls=[call("transfer", {"to": lookalike, "amount": "0.001"})]),
        Reply(text=["Refused."]))
    before = balance(anvil, STRANGER)

    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, f"pay {STRANGER} 0.001 eth")
        pending = await live.tg.until(lambda: card(live, "PENDING APPROVAL"), 30)
        assert "waiting for your companion app" in pending.text and "recipient.new" in pending.text
        assert "href" not in pending.raw
        await live.tg.until(lambda: "Needs your approval." in live.replies())
        live.tg.message(OWNER, f"send 0.001 to {lookalike}")
        denied = await live.tg.until(lambda: card(live, "DENIED"), 30)
        assert "recipient.lookalike" in denied.text and "href" not in denied.raw

    telegram_signer.serve(scenario, explorers={31337: EXPLORER})
    assert balance(anvil, STRANGER) == before


def test_slash_send_from_telegram_uses_the_same_signer_path(telegram_signer, anvil):
    async def scenario(live: Live) -> None:
        live.tg.message(OWNER, f"/send {FRIEND} 0.001eth")
        signed = await live.tg.until(lambda: card(live, "SIGNED"), 30)
        tx_hash = signed.text.split("tx ", 1)[1].split()[0]
        await asyncio.to_thread(wait_receipt, anvil, tx_hash)
        assert live.llm.requests == []  # a command: no model involved

    telegram_signer.serve(scenario)
