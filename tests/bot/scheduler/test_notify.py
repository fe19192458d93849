"""Notifier: target resolution, the remembered last DM, failures that never raise or leak text."""

from __future__ import annotations

import asyncio
import logging
import stat

import pytest

from bot.channels.base import Inbound
from bot.notify import Notifier, parse_target
from bot.sessions.keys import target_of_session
from bot.tools.base import ContextKind
from tests.bot.scheduler.conftest import Outbox

KEY = "0x" + "ab" * 32  # looks like a private key


def test_resolution_order_and_last_dm_memory(tmp_path):
    outbox = Outbox()
    notifier = Notifier(None, tmp_path)
    notifier.register("telegram", outbox.send)
    notifier.register("discord", outbox.send)
    assert asyncio.run(notifier.notify("nobody yet")) is None
    notifier.note_inbound(Inbound("discord", "7", "m1", "hi", kind=ContextKind.GROUP, chat="guild-chan"))
    assert notifier.last_dm is None  # a group never becomes the fallback
    notifier.note_inbound(Inbound("telegram", "42", "m2", "hi"))
    assert asyncio.run(notifier.notify("to the last dm")) == "telegram:42"
    assert asyncio.run(notifier.notify("explicit", "discord:9")) == "discord:9"
    assert outbox.sent == [("42", "to the last dm"), ("9", "explicit")]
    assert stat.S_IMODE((tmp_path / "notify-last.json").stat().st_mode) == 0o600

    again = Notifier("discord:5", tmp_path)  # after a restart
    assert again.last_dm == "telegram:42" and again.resolve() == "discord:5"


def test_failures_are_contained_and_never_log_the_text(caplog):
    notifier = Notifier("telegram:1")
    caplog.set_level(logging.INFO)
    assert asyncio.run(notifier.notify("secret plan")) is None  # telegram not running
    notifier.register("telegram", Outbox(fail=True).send)
    assert asyncio.run(notifier.notify("secret plan")) is None
    assert asyncio.run(notifier.notify("secret plan", "bad target")) is None
    assert "secret plan" not in caplog.text and "ConnectionError" in caplog.text


def test_secrets_are_redacted_unless_vouched_public():
    outbox = Outbox()
    notifier = Notifier("telegram:1")
    notifier.register("telegram", outbox.send)
    asyncio.run(notifier.notify(f"key {KEY}"))
    asyncio.run(notifier.notify(f"tx {KEY}", public=(KEY,)))
    assert KEY not in outbox.sent[0][1] and outbox.sent[1][1] == f"tx {KEY}"


def test_targets():
    assert parse_target("telegram:123") == ("telegram", "123")
    assert (
        target_of_session("discord:chan:user") == "discord:chan"
        and target_of_session("telegram:5") == "telegram:5"
    )
    for bad in ("telegram", "telegram:", ":5", "tele gram:5", "telegram:1:2", "Telegram:5"):
        with pytest.raises(ValueError):
            parse_target(bad)
    with pytest.raises(ValueError):
        Notifier("nope")
