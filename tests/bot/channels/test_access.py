"""Default deny with pairing: strangers get a code and nothing else; only the owner's approval admits them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from bot.channels.access import (
    ALPHABET,
    CODE_LENGTH,
    TELL_AGAIN_AFTER,
    AccessStore,
    Gatekeeper,
    PairingError,
    normalize_code,
)
from bot.cli.app import app


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> AccessStore:
    s = AccessStore(tmp_path / "state" / "access.sqlite3", clock=clock)
    yield s
    s.close()


def test_store_file_is_private(store: AccessStore, tmp_path: Path) -> None:
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "access.sqlite3").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "state").st_mode) == 0o700


def test_empty_allowlist_admits_nobody(store: AccessStore) -> None:
    gate = Gatekeeper(store, "telegram", [])
    first = gate.admit("42", "mallory")
    assert not first.allowed and first.reply is not None
    code = store.pending()[0].code
    assert code in first.reply and len(code) == CODE_LENGTH and set(code) <= set(ALPHABET)
    follow_up = gate.admit("42")
    assert not follow_up.allowed and follow_up.reply is not None and code not in follow_up.reply


def test_allowlisted_peer_is_admitted_without_a_code(store: AccessStore) -> None:
    gate = Gatekeeper(store, "telegram", ["7"])
    assert gate.admit("7").allowed and store.pending() == []


def test_approval_admits_only_that_peer_on_that_channel(store: AccessStore) -> None:
    telegram, discord = Gatekeeper(store, "telegram", []), Gatekeeper(store, "discord", [])
    telegram.admit("42", "alice")
    code = store.pending()[0].code
    grant = store.approve(code.lower()[:4] + "-" + code.lower()[4:], by="cli:owner")  # as typed by a human
    assert (grant.channel, grant.peer, grant.display, grant.approved_by) == (
        "telegram",
        "42",
        "alice",
        "cli:owner",
    )
    assert telegram.admit("42").allowed
    assert not discord.admit("42").allowed and not telegram.admit("43").allowed
    with pytest.raises(PairingError):
        store.approve(code, by="cli:owner")  # single use


def test_codes_expire(store: AccessStore, clock: Clock) -> None:
    request = store.request("telegram", "42")
    assert request is not None
    clock.now += 3601
    with pytest.raises(PairingError, match="no pending pairing"):
        store.approve(request.code, by="owner")
    assert store.pending() == []


def test_a_stranger_hears_a_follow_up_answer_and_then_nothing_within_a_window(
    store: AccessStore, clock: Clock
) -> None:
    gate = Gatekeeper(store, "telegram", [])
    assert gate.admit("42").reply is not None
    follow_up = gate.admit("42").reply  # nobody writes into silence...
    assert follow_up is not None and "approves the pairing code I sent you above" in follow_up
    for _ in range(50):  # ...but a flood is not answered message by message
        assert gate.admit("42").reply is None
    assert len(store.pending()) == 1
    clock.now += TELL_AGAIN_AFTER + 1
    again = gate.admit("42").reply
    assert again is not None and store.pending()[0].code in again  # the same live code
    assert again.startswith("Still waiting for the owner")  # writing again is answered, not ignored
    assert gate.admit("42").reply is not None and gate.admit("42").reply is None  # the window starts over


def test_owners_hear_of_requests_without_the_code_and_newcomers_of_their_grant(store: AccessStore) -> None:
    import asyncio

    from bot.notify import Notifier
    from bot.runtime.pairing_watch import WELCOME, PairingWatch

    sent: list[tuple[str, str]] = []

    async def send(chat: str, text: str) -> None:
        sent.append((chat, text))

    async def go() -> None:
        notifier = Notifier()
        notifier.register("telegram", send)
        watch = PairingWatch(store, notifier, ("telegram:1001", "console:me"), interval=3600)
        await watch.start()
        request = Gatekeeper(store, "telegram", []).admit("42", "alice")
        assert request.reply is not None
        await watch.look()
        [(owner_chat, text)] = sent
        code = store.pending()[0].code
        assert owner_chat == "1001" and "alice" in text and "42" in text and code not in text
        store.approve(code, by="cli:owner")  # as `owlia pair approve` does, from another process
        await watch.look()
        assert sent[-1] == ("42", WELCOME)
        await watch.look()
        assert len(sent) == 2  # each said once
        await watch.stop()

    asyncio.run(go())


def test_revoked_peer_must_pair_again(store: AccessStore) -> None:
    request = store.request("discord", "9")
    assert request is not None
    store.approve(request.code, by="owner")
    assert store.revoke("discord", "9") and not store.is_paired("discord", "9")
    assert not store.revoke("discord", "9")


def test_display_names_cannot_carry_terminal_escapes(store: AccessStore) -> None:
    request = store.request("telegram", "1", "evil\x1b[2J\x07name\n")
    assert request is not None and request.display == "evil[2Jname"


@pytest.mark.parametrize("bad", ["", "ABC", "ABCDEFGHJ", "ABCD EFGH IJ"])
def test_malformed_codes_are_refused(store: AccessStore, bad: str) -> None:
    store.request("telegram", "1")
    with pytest.raises(PairingError):
        store.approve(bad, by="owner")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=40), st.integers(1, 5))
def test_never_more_than_max_pending_codes(tmp_path_factory, peers: list[int], cap: int) -> None:
    path = tmp_path_factory.mktemp("access") / "access.sqlite3"
    store = AccessStore(path, max_pending=cap)
    try:
        issued = {}
        for peer in peers:
            request = store.request("telegram", str(peer))
            if request is not None:
                assert issued.setdefault(peer, request.code) == request.code  # a peer keeps its code
        assert len(store.pending()) == min(cap, len(set(peers)))
    finally:
        store.close()


@given(st.text(max_size=20))
def test_normalize_code_keeps_only_meaningful_characters(text: str) -> None:
    assert not set(normalize_code(text)) & set(" -_")


def test_pair_cli_approves_lists_and_revokes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = AccessStore(home / "state" / "access.sqlite3")
    request = store.request("telegram", "42", "alice")
    store.close()
    assert request is not None
    runner = CliRunner()
    listed = runner.invoke(app, ["--home", str(home), "pair", "list"])
    assert listed.exit_code == 0 and request.code in listed.output and "paired: nobody" in listed.output
    approved = runner.invoke(app, ["--home", str(home), "pair", "approve", request.code])
    assert approved.exit_code == 0 and "paired telegram:42 (alice)" in approved.output
    again = runner.invoke(app, ["--home", str(home), "pair", "approve", request.code])
    assert again.exit_code == 1 and "no pending pairing" in again.output
    revoked = runner.invoke(app, ["--home", str(home), "pair", "revoke", "telegram:42"])
    assert revoked.exit_code == 0
    assert runner.invoke(app, ["--home", str(home), "pair", "revoke", "telegram:42"]).exit_code == 1
