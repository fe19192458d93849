"""The Telegram journey through the real signer to anvil, as a person reads it: one message per
action (the signer's card; the model's lead-in becomes it and its reply after it is not sent), at
most two for an injected invoice, people's words everywhere (no rule ids, request or key ids, base
units, 78-digit numbers, socket paths, second prefix style), the ids on request with /details, the
tool results the model quotes worded the same way, a signer that is down said once with the
command that starts it, and balances of the main account and the session key."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest

from companion_bridge.companion.wallet import CompanionWallet
from signer.wire.messages import PAIR_DOMAIN, pair_body, pairing_mac, signed_message
from signer.wire.protocol import Scope
from tests.bot.agent.conftest import Reply, call
from tests.bot.agent.test_agent_e2e import tool_results
from tests.bot.channels.telegram.conftest import OWNER, Live
from tests.bot.readable import assert_readable, full_tx_hash
from tests.conftest import FRIEND, STRANGER, balance, wait_receipt

pytestmark = pytest.mark.chain
EXPLORER = "https://explorer.example/tx/{hash}"


async def after(live: Live, text: str, settle: float = 1.0, timeout: float = 30.0) -> list:
    """Send `text`, wait until the bot has answered and gone quiet; the messages it sent for it."""
    before = len(live.tg.chat(OWNER))
    live.tg.message(OWNER, text)
    await live.tg.until(lambda: len(live.tg.chat(OWNER)) > before, timeout)
    while True:  # quiet for `settle` seconds: every message of this action has arrived
        count, edits = len(live.tg.chat(OWNER)), len(live.tg.calls_of("editMessageText"))
        await asyncio.sleep(settle)
        if len(live.tg.chat(OWNER)) == count and len(live.tg.calls_of("editMessageText")) == edits:
            return live.tg.chat(OWNER)[before:]


def test_an_llm_transfer_is_one_message_the_signer_s_card(telegram_signer, anvil):
    before = balance(anvil, FRIEND)
    telegram_signer.bot.llm.enqueue(
        Reply(
            text=["Sending now."],
            tool_calls=[call("transfer", {"to": FRIEND, "amount": "0.001", "reason": "lunch"})],
        ),
        Reply(text=["Done, it is on its way."]),
    )
    seen: dict = {}

    async def scenario(live: Live) -> None:
        seen["action"] = await after(live, f"send 0.001 ETH to {FRIEND}")
        seen["details"] = [m.text for m in await after(live, "/details", settle=0.3)]

    telegram_signer.serve(scenario, explorers={31337: EXPLORER})
    [card] = seen["action"]  # not "Sending now.", card, "Done, it is on its way.": one message
    assert card.text.startswith("Signed and sent: send 0.001 ETH to dev-friend")  # the signer's reading
    assert "(about $3.00)." in card.text  # dollars beside units: the config's price of ETH is 3000
    assert_readable(card.text)
    [details] = seen["details"]
    tx_hash = full_tx_hash(details)
    assert "request id: req_" in details  # the ids, on request
    assert card.raw.count(f'href="https://explorer.example/tx/{tx_hash}"') == 1
    receipt = wait_receipt(anvil, tx_hash)
    assert int(receipt["status"], 16) == 1 and balance(anvil, FRIEND) - before == 10**15
    result = tool_results(telegram_signer.bot.llm.requests[1])[0]["content"]
    assert result.startswith("Signed and sent: send 0.001 ETH to dev-friend")  # what the model quotes
    assert_readable(result)


def test_an_injected_invoice_is_at_most_two_messages_and_never_the_same_error_twice(telegram_signer, anvil):
    """A pasted invoice with a bad checksum: the model's first try fails, it retries, the signer holds
    it for the companion. Before: a tool error, interim text, the card, the reply, and a notice."""
    bad_checksum = STRANGER[:-1] + STRANGER[-1].lower()
    before = balance(anvil, STRANGER)
    telegram_signer.bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": bad_checksum, "amount": "0.1", "reason": "invoice 42"})]),
        Reply(
            text=["Paying the invoice."],
            tool_calls=[call("transfer", {"to": STRANGER, "amount": "0.1", "reason": "invoice 42"})],
        ),
        Reply(text=["The invoice needs your approval in the companion app."]),
    )
    seen: dict = {}

    async def scenario(live: Live) -> None:
        seen["action"] = await after(live, f"pay this invoice: 0.1 ETH to {bad_checksum}, thanks", settle=2.0)

    telegram_signer.serve(scenario, explorers={31337: EXPLORER})
    texts = [m.text for m in seen["action"]]
    assert 1 <= len(texts) <= 2, texts
    [card] = texts
    assert card.startswith("Waiting for your approval: send 0.1 ETH")
    assert "exceeds the per-transaction limit" in card and "the recipient is not in the address book" in card
    assert "No companion app is paired yet" in card and "owlia companion pair" in card
    assert "checksum" not in card  # the first try's error went to the model, not to the chat
    assert_readable(card)
    first = tool_results(telegram_signer.bot.llm.requests[1])[0]["content"]
    assert first.count("checksum") == 1 and "^" not in first and "[0-9" not in first  # once, no raw regex
    assert balance(anvil, STRANGER) == before


def test_a_lookalike_is_refused_in_one_message_and_slash_send_is_one_message(telegram_signer, anvil):
    lookalike = FRIEND[:6] + "0" * 32 + FRIEND[-4:]
    telegram_signer.bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": lookalike, "amount": "0.001"})]), Reply(text=["Refused."])
    )
    seen: dict = {}

    async def scenario(live: Live) -> None:
        seen["denied"] = [m.text for m in await after(live, f"send 0.001 to {lookalike}")]
        seen["sent"] = await after(live, f"/send {FRIEND} 0.001eth")
        seen["approvals"] = [m.text for m in await after(live, "/approvals", settle=0.3)]

    telegram_signer.serve(scenario, explorers={31337: EXPLORER})
    [denied] = seen["denied"]
    assert denied.startswith("Refused by your policy: send 0.001 ETH") and "imitates dev-friend" in denied
    assert denied.endswith("Nothing was signed.")
    [sent] = seen["sent"]
    assert sent.text.startswith("Signed and sent: send 0.001 ETH to dev-friend") and 'href="' in sent.raw
    assert (
        telegram_signer.bot.llm.pending == 0 and len(telegram_signer.bot.llm.requests) == 2
    )  # no model for /send
    assert_readable(denied, sent.text, *seen["approvals"])


def _pair_a_companion(stack) -> str:
    """Pair a companion with the signer as the bridge would relay it; its main account's address."""
    wallet = CompanionWallet.create(
        stack.root / f"phone-{time.monotonic_ns()}", bytearray(b"passphrase 1"), scrypt_n=2**10, name="phone"
    )
    pairing = stack.call_sync(stack.admin_token, "companion.pair_begin", {"name": "phone"})
    body = pair_body(
        pairing["pairing_id"],
        wallet.device_public_key,
        "phone",
        wallet.main_address,
        time.time(),
        secrets.token_hex(32),
    )
    message = signed_message(PAIR_DOMAIN, body)
    bridge = stack.client_token(f"bridge{time.monotonic_ns() % 10**9}", Scope.BRIDGE)
    stack.call_sync(
        bridge,
        "companion.pair_complete",
        {
            **body,
            "main_address": wallet.main_address,
            "signature": wallet.device_sign(message),
            "mac": pairing_mac(pairing["code"], message),
        },
    )
    return wallet.main_address


def test_balances_show_the_main_account_and_the_session_key_in_units_and_dollars(telegram_signer, stack):
    main = _pair_a_companion(stack)
    telegram_signer.bot.llm.enqueue(
        Reply(tool_calls=[call("wallet_balance", {})]), Reply(text=["Here are your balances."])
    )
    seen: dict = {}

    async def scenario(live: Live) -> None:
        seen["command"] = [m.text for m in await after(live, "/balance", settle=0.3)]
        seen["asked"] = [m.text for m in await after(live, "what's my balance?")]

    telegram_signer.serve(scenario)
    [shown] = seen["command"]
    assert f"main account {main}" in shown and "- session key 0x" in shown.replace("•", "-")
    assert " ETH (about $" in shown  # the config's static price: dollars beside units
    assert_readable(shown)
    assert seen["asked"] == ["Here are your balances."]
    result = tool_results(telegram_signer.bot.llm.requests[1])[0]["content"]
    assert f"main account {main}" in result and "session key" in result
    assert_readable(result)


def test_a_signer_that_is_down_is_said_once_with_the_command_that_starts_it(telegram_signer, stack):
    telegram_signer.bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": FRIEND, "amount": "0.001"})]),
        Reply(text=["The signer is not running; start it with `owlia signer serve` and ask again."]),
    )
    seen: dict = {}

    async def scenario(live: Live) -> None:
        stack.stop()
        seen["send"] = [m.text for m in await after(live, f"/send {FRIEND} 0.001eth", settle=0.3)]
        seen["balance"] = [m.text for m in await after(live, "/balance", settle=0.3)]
        seen["asked"] = [m.text for m in await after(live, f"send 0.001 ETH to {FRIEND}")]

    telegram_signer.serve(scenario)
    socket = str(stack.sockdir)  # the host's path: never in the chat, never to the model
    for texts in (seen["send"], seen["balance"]):
        [said] = texts  # once, not a note and a reply
        assert "The signer is not running" in said and "owlia signer serve" in said and "owlia up" in said
        assert socket not in said and "internal error" not in said
        assert_readable(said)
    assert len(seen["asked"]) == 1
    result = tool_results(telegram_signer.bot.llm.requests[1])[0]["content"]
    assert "owlia signer serve" in result and socket not in result and ".sock" not in result


def test_an_escalation_links_to_the_companion_app_when_one_is_paired(telegram_signer, stack):
    from tests.bot.agent.conftest import default_bot_section

    _pair_a_companion(stack)
    app = "https://bridge.example/app/"
    telegram_signer.bot.configure(default_bot_section(telegram_signer.bot.llm, companion={"app_url": app}))
    seen: dict = {}

    async def scenario(live: Live) -> None:
        seen["action"] = [m for m in await after(live, f"/send {STRANGER} 0.001eth")]

    telegram_signer.serve(scenario)
    [card] = seen["action"]
    assert card.text.startswith("Waiting for your approval: send 0.001 ETH")
    assert card.text.endswith(f"Approve or deny it in your companion app: {app}")
    assert "No companion app is paired" not in card.text
    assert_readable(card.text)
