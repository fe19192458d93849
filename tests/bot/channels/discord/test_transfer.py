"""A transfer asked for in a DM goes through the real signer to anvil; the user sees the signer's
own decoded summary and the tx hash, never the model's description of it."""

from __future__ import annotations

import re

import pytest

from tests.bot.agent.conftest import Reply, call
from tests.bot.channels.discord.conftest import OWNER, run_discord
from tests.conftest import FRIEND, STRANGER, balance, wait_receipt

pytestmark = pytest.mark.chain
TX = re.compile(r"tx (0x[0-9a-fA-F]{64})")


def test_transfer_in_a_dm_is_signed_and_lands_on_chain(bot, anvil):
    before = balance(anvil, FRIEND)
    transfer = call("transfer", {"to": FRIEND, "amount": "0.001", "reason": "lunch"})
    bot.llm.enqueue(Reply(text=["Sending it now."], tool_calls=[transfer]), Reply(text=["Done: sent."]))
    seen: dict[str, str] = {}

    async def scenario(h):
        await h.server.dm(OWNER, f"send 0.001 ETH to {FRIEND} for lunch")
        card = await h.first_in(h.server.dm_channel(OWNER), lambda m: "[signer]" in m.content, 30)
        await h.server.wait_for(lambda: any(m.content == "Done: sent." for m in h.dm_messages()))
        seen["card"] = card.content
        seen["order"] = "|".join(m.content for m in h.dm_messages())

    run_discord(bot, scenario)
    card = seen["card"]
    assert card.startswith("```") and "[signer] SIGNED: send 0.001 ETH to dev-friend" in card
    order = seen["order"]
    assert order.index("Sending it now.") < order.index("[signer]") < order.index("Done")
    tx_hash = TX.search(card).group(1)
    wait_receipt(anvil, tx_hash)
    assert balance(anvil, FRIEND) - before == 10**15


def test_send_slash_command_to_a_new_recipient_waits_for_the_companion(bot, anvil):
    before = balance(anvil, STRANGER)

    async def scenario(h):
        await h.server.slash(OWNER, "send", {"address": STRANGER, "amount": "0.001eth"})
        card = await h.first_in(h.server.dm_channel(OWNER), lambda m: "[signer]" in m.content, 30)
        assert "PENDING APPROVAL" in card.content and "recipient.new" in card.content

    run_discord(bot, scenario)
    assert balance(anvil, STRANGER) == before
    assert bot.llm.requests == []
