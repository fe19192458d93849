"""The Must-show conversations, end to end: console channel -> agent -> real SDK -> fake LLM
server; tools -> real signer daemon -> anvil."""

from __future__ import annotations

import json

import pytest

from tests.bot.agent.conftest import RecordingOut, Reply, attach_bot, call
from tests.bot.readable import assert_readable, full_tx_hash
from tests.conftest import FRIEND, STRANGER, balance, wait_receipt

pytestmark = pytest.mark.chain


def tool_results(request) -> list[dict]:
    """Tool results the SDK sent back to the model in one recorded request (Anthropic shape)."""
    return [
        block
        for message in request.body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_balance_question_streams_the_answer_and_feeds_the_tool_result_back(bot):
    bot.llm.enqueue(
        Reply(text=["Let me ", "check."], tool_calls=[call("wallet_balance", {})]),
        Reply(text=["You have ", "about ", "0.1 ETH."]),
    )
    out = bot.chat("what's my balance?")
    assert "owlia> Let me check." in out and "You have about 0.1 ETH." in out
    second = bot.llm.requests[1]
    results = tool_results(second)
    assert len(results) == 1 and "0.1 ETH" in results[0]["content"]
    offered = {t["name"] for t in bot.llm.requests[0].body["tools"]}
    assert {"wallet_balance", "transfer", "web_fetch", "remember"} <= offered


def test_transfer_within_policy_is_auto_signed_on_chain(bot, anvil):
    before = balance(anvil, FRIEND)
    bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": FRIEND, "amount": "0.001", "reason": "lunch"})]),
        Reply(text=["Sent."]),
    )
    out = bot.chat(f"send 0.001 ETH to {FRIEND}", "/details")
    assert (
        "Signed and sent: send 0.001 ETH to dev-friend" in out and "Sent." not in out
    )  # the card says it all
    tx_hash = full_tx_hash(out)
    assert f"Transaction {tx_hash[:10]}…{tx_hash[-6:]}." in out
    assert_readable(out.split("Details of the last signing request")[0])
    wait_receipt(anvil, tx_hash)
    assert balance(anvil, FRIEND) - before == 10**15
    result = tool_results(bot.llm.requests[1])[0]["content"]
    assert result.startswith("Signed and sent: send 0.001 ETH to dev-friend")  # the words the user read
    assert_readable(result)
    # the session keeps the signer's structured outcome for /approvals and compaction
    session_file = next((bot.home / "sessions").glob("*.jsonl"))
    assert tx_hash in session_file.read_text()


def test_new_recipient_escalates_to_the_companion(bot, anvil):
    before = balance(anvil, STRANGER)
    bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": STRANGER, "amount": "0.001"})]),
        Reply(text=["That needs your approval."]),
    )
    out = bot.chat(f"pay {STRANGER} 0.001 eth")
    assert (
        "Waiting for your approval: send 0.001 ETH" in out
        and "the recipient is not in the address book" in out
    )
    assert "No companion app is paired yet" in out and "owlia companion pair" in out  # none is: say how
    assert "That needs your approval." not in out
    assert_readable(out)
    assert balance(anvil, STRANGER) == before
    pending = bot.chat("/approvals")
    assert "1 waiting for your companion app" in pending and "- pending approval: send 0.001 ETH" in pending
    assert_readable(pending)
    details = bot.chat("/details")
    assert "request id: req_" in details and "recipient.new" in details  # on request, all of it


def test_lookalike_recipient_is_denied_and_explained(bot, anvil):
    lookalike = FRIEND[:6] + "0" * 32 + FRIEND[-4:]
    bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": lookalike, "amount": "0.001"})]),
        Reply(text=["The signer refused."]),
    )
    out = bot.chat(f"send 0.001 to {lookalike}")
    assert "Refused by your policy: send 0.001 ETH" in out and "imitates dev-friend" in out
    assert "Nothing was signed." in out and "The signer refused." not in out
    assert_readable(out)
    result = tool_results(bot.llm.requests[1])[0]["content"]
    assert "Do not try to get around it" in result
    assert_readable(result)


def test_failover_from_an_overloaded_provider_tells_the_user(stack, llm):
    stack.funded_session_key()
    bot = attach_bot(
        stack,
        llm,
        llm={
            "profiles": [
                {"name": "primary", "model": "anthropic/claude-test", "base_url": llm.url},
                {"name": "backup", "model": "openai/gpt-test", "base_url": llm.openai_url},
            ]
        },
    )
    llm.enqueue(
        Reply(status=529, error_type="overloaded_error", error_message="Overloaded"),
        Reply(text=["Hello from the backup."]),
    )
    out = bot.chat("hi")
    assert "Hello from the backup." in out and "fallback model profile 'backup'" in out
    assert [r.path for r in llm.requests] == ["/v1/messages", "/v1/chat/completions"]
    cooldowns = json.loads((bot.home / "state" / "llm-cooldowns.json").read_text())
    assert cooldowns["profiles"]["primary"]["failures"] == 1
    # the next message skips the cooling profile entirely
    llm.enqueue(Reply(text=["Still backup."]))
    assert "Still backup." in bot.chat("again")
    assert llm.requests[-1].path == "/v1/chat/completions"


def test_rate_limited_profile_fails_over_too(stack, llm):
    bot = attach_bot(
        stack,
        llm,
        llm={
            "profiles": [
                {"name": "a", "model": "anthropic/claude-test", "base_url": llm.url},
                {"name": "b", "model": "anthropic/claude-test-2", "base_url": llm.url},
            ]
        },
    )
    llm.enqueue(
        Reply(status=429, error_type="rate_limit_error", error_message="slow down"), Reply(text=["ok from b"])
    )
    assert "ok from b" in bot.chat("hi")


def test_streaming_reaches_the_console_as_separate_writes(bot):
    pieces = ["Streaming ", "tokens ", "flowing ", "nicely"]
    bot.llm.enqueue(Reply(text=pieces))
    out = RecordingOut()
    bot.chat_to(out, "count")
    assert [w for w in out.writes if w in pieces] == pieces
