"""/send in chat: the same amount grammar as the command line, and failures that say what to do."""

from __future__ import annotations

import asyncio

from tests.bot.agent.test_withdrawn_turns import Sink, message
from tests.bot.readable import assert_readable


def test_send_in_chat_needs_the_unit_like_the_command_line(bot) -> None:
    async def go() -> list[str]:
        runtime = bot.runtime()
        try:
            replies = []
            for n, text in enumerate(
                [
                    "/send 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 0.001",
                    "/send 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 1e999eth",
                ]
            ):
                replies.append((await runtime.core.handle(message(text, 10 + n), Sink())).reply)
            return replies
        finally:
            await runtime.close()

    bare, exponent = asyncio.run(go())
    assert "has no unit" in bare and "0.001eth" in bare
    assert "exponents are not accepted" in exponent and "unknown token" not in exponent


def test_an_unfunded_session_key_says_how_to_fund_it(stack, llm) -> None:
    """The first transfer after following the guide failed with the node's 'Insufficient funds for gas *
    price + value' and nothing about what to do."""
    from signer.wire.exchange import new_idempotency_key
    from tests.bot.agent.conftest import attach_bot

    stack.call_sync(
        stack.admin_token,
        "session_key.create",
        {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337},
    )  # never topped up
    harness = attach_bot(stack, llm)
    out = harness.chat("/send 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 0.001eth")
    assert "insufficient funds" in out.lower(), out
    assert "owlia signer session-key topup" in out and "owlia companion topup" in out


def test_an_escalation_card_lists_every_rule_that_fired(bot) -> None:
    out = bot.chat(
        "/send 0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC 0.02eth"
    )  # new recipient and over the limit
    assert "Waiting for your approval: send 0.02 ETH" in out, out
    why = next(line for line in out.splitlines() if line.startswith("Why: "))
    assert "the recipient is not in the address book" in why and "exceeds the per-transaction limit" in why
    assert_readable(out)
    details = bot.chat("/details")
    assert "recipient.new" in details and "limit.per_tx" in details  # every rule that fired, on request
