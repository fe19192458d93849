"""`/send NAME AMOUNT`: a name from the signer's address book is accepted where an address is, run as
the real `owlia chat -m` process against a real signer on anvil; a local contact's name is paid as a
new recipient (the signer escalates it), and an unknown name is refused in words, nothing sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bot.tools.contacts import ContactStore
from tests.conftest import FRIEND, STRANGER, balance

pytestmark = pytest.mark.chain


def chat(home, text: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "chat", "-m", text],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_send_takes_a_name_from_the_address_book(bot, anvil):
    home = bot.home
    before = balance(anvil, FRIEND)
    done = chat(home, "/send dev-friend 0.001eth")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dev-friend" in done.stdout and "not an address" not in done.stdout, done.stdout
    assert balance(anvil, FRIEND) - before == 10**15  # signed, sent and mined: the book's own address
    assert chat(home, "/send DEV-FRIEND 0.001eth").returncode == 0  # names are matched without case
    assert balance(anvil, FRIEND) - before == 2 * 10**15


def test_a_local_contact_is_paid_as_a_new_recipient_and_an_unknown_name_is_refused(bot, anvil):
    home = bot.home
    ContactStore(home / "state").add("stranger", STRANGER)
    before = balance(anvil, STRANGER)
    done = chat(home, "/send stranger 0.001eth")
    assert done.returncode == 0, done.stderr
    assert "pending" in done.stdout.lower() or "approval" in done.stdout.lower(), done.stdout
    unknown = chat(home, "/send nobody-we-know 0.001eth")
    assert "'nobody-we-know' is neither an address" in unknown.stdout and "address book" in unknown.stdout
    assert balance(anvil, STRANGER) == before


def test_the_transfer_tool_takes_a_name_from_the_address_book(bot, anvil):
    """The model names the recipient as the user did; the address comes from the signer's own book."""
    from tests.bot.agent.conftest import FAKE_KEYS, call
    from tests.fakes.llm_server import Reply

    bot.llm.enqueue(
        Reply(tool_calls=[call("transfer", {"to": "dev-friend", "amount": "0.001"})]),
        Reply(text=["Sent."]),
        Reply(tool_calls=[call("transfer", {"to": "someone-else", "amount": "0.001"})]),
        Reply(text=["I could not find them."]),
    )
    before = balance(anvil, FRIEND)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    env["ANTHROPIC_API_KEY"] = FAKE_KEYS["anthropic"]

    def say(text: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", "--home", str(bot.home), "chat", "-m", text],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = say("pay dev-friend 0.001 eth")
    assert done.returncode == 0, done.stdout + done.stderr
    assert balance(anvil, FRIEND) - before == 10**15, done.stdout
    unknown = say("pay someone-else 0.001 eth")
    assert unknown.returncode == 0, unknown.stderr
    result = [
        p for p in bot.llm.requests[3].body["messages"][-1]["content"] if p.get("type") == "tool_result"
    ]
    assert "'someone-else' is neither an address nor a name" in json.dumps(result), result
    assert balance(anvil, FRIEND) - before == 10**15
