"""A transfer asked for in a DM goes through the real signer to anvil; the user sees the signer's
own decoded summary, in one message for the action, never the model's description of it."""

from __future__ import annotations

import pytest

from tests.bot.agent.conftest import Reply, call
from tests.bot.channels.discord.conftest import OWNER, run_discord
from tests.bot.readable import assert_readable, full_tx_hash
from tests.conftest import FRIEND, STRANGER, balance, wait_receipt

pytestmark = pytest.mark.chain


def test_transfer_in_a_dm_is_signed_and_lands_on_chain(bot, anvil):
    before = balance(anvil, FRIEND)
    transfer = call("transfer", {"to": FRIEND, "amount": "0.001", "reason": "lunch"})
    bot.llm.enqueue(Reply(text=["Sending it now."], tool_calls=[transfer]), Reply(text=["Done: sent."]))
    seen: dict[str, str] = {}

    async def scenario(h):
        await h.server.dm(OWNER, f"send 0.001 ETH to {FRIEND} for lunch")
        await h.first_in(h.server.dm_channel(OWNER), lambda m: m.content.startswith("Signed and sent"), 30)
        await h.server.wait_for(lambda: bot.llm.pending == 0)
        seen["messages"] = [m.content for m in h.dm_messages()]
        await h.server.dm(OWNER, "/details")
        details = await h.first_in(h.server.dm_channel(OWNER), lambda m: m.content.startswith("Details"), 10)
        seen["details"] = details.content

    run_discord(bot, scenario)
    [card] = seen[
        "messages"
    ]  # one message for the action: the lead-in became the card, the reply is not sent
    assert "Signed and sent: send 0.001 ETH to dev-friend" in card and "Done: sent." not in card
    assert_readable(card)
    tx_hash = full_tx_hash(seen["details"])
    assert f"Transaction {tx_hash[:10]}" in card
    wait_receipt(anvil, tx_hash)
    assert balance(anvil, FRIEND) - before == 10**15


def test_send_slash_command_to_a_new_recipient_waits_for_the_companion(bot, anvil):
    before = balance(anvil, STRANGER)

    async def scenario(h):
        await h.server.slash(OWNER, "send", {"address": STRANGER, "amount": "0.001eth"})
        card = await h.first_in(
            h.server.dm_channel(OWNER), lambda m: "Waiting for your approval" in m.content, 30
        )
        assert (
            "the recipient is not in the address book" in card.content
            and "owlia companion pair" in card.content
        )
        assert_readable(card.content)

    run_discord(bot, scenario)
    assert balance(anvil, STRANGER) == before
    assert bot.llm.requests == []
