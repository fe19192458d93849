"""The approval journal on its own: its bound, what settles an entry, what counts as a signed quote."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from companion_bridge.companion.journal import (
    Entry,
    Journal,
    JournalError,
    JournalFull,
    admit,
    apply_quote,
)
from companion_bridge.companion.outstanding import warning_lines
from companion_bridge.companion.quotes import NonceQuote, verified_quote
from signer.devices import signed_message
from signer.fsperm import ensure_private_dir
from signer.identity import NONCE_DOMAIN

MAIN = "0x1111111111111111111111111111111111111111"
FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def entry(n: int, *, nonce: int = 0, chain_id: int = 31337, quoted_at: float | None = None) -> Entry:
    return Entry(f"req_{n}", chain_id, nonce, f"0x{n:064x}", FRIEND, str(10**16), f"send 0.01 ETH ({n})", 1000.0,
                 quoted_at=quoted_at)


def settle(e: Entry, ts: float = 2000.0) -> Entry:
    e.settled_at, e.settled_by = ts, {"main_nonce": e.nonce + 1, "quote_ts": ts}
    return e


# ---- the bound -------------------------------------------------------------------------------

OPS = st.lists(st.tuples(st.sampled_from(["record", "settle", "reopen"]), st.integers(0, 1000)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops=OPS, max_entries=st.integers(1, 8), unsettled_share=st.integers(1, 8))
def test_the_journal_is_bounded_and_never_drops_an_unsettled_entry(ops, max_entries, unsettled_share):
    max_unsettled = min(unsettled_share, max_entries)
    entries: list[Entry] = []
    ever_unsettled: set[str] = set()  # tx hashes recorded and not settled since
    serial = 0
    for op, pick in ops:
        if op == "record":
            serial += 1
            new = entry(serial)
            before = list(entries)
            open_count = sum(not e.settled for e in entries)
            if open_count >= max_unsettled:
                with pytest.raises(JournalFull, match="still unsettled"):
                    admit(entries, new, max_entries=max_entries, max_unsettled=max_unsettled)
                assert entries == before  # a refusal changes nothing
                continue
            entries = admit(entries, new, max_entries=max_entries, max_unsettled=max_unsettled)
            ever_unsettled.add(new.tx_hash)
            dropped = [e for e in before if e not in entries]
            assert all(e.settled for e in dropped)  # only settled entries ever go...
            kept_settled = [e for e in before if e.settled and e in entries]
            assert all(before.index(d) < before.index(k) for d in dropped for k in kept_settled)  # ...oldest first
            assert [e for e in entries if e in before] == [e for e in before if e in entries]  # order kept
        elif entries and op == "settle":
            target = entries[pick % len(entries)]
            if not target.settled:
                settle(target)
                ever_unsettled.discard(target.tx_hash)
        elif entries and op == "reopen":
            target = entries[pick % len(entries)]
            if target.settled:
                target.settled_at = target.settled_by = None
                ever_unsettled.add(target.tx_hash)
        assert len(entries) <= max_entries
        assert ever_unsettled <= {e.tx_hash for e in entries}  # nothing unsettled ever silently went away


def test_the_same_signed_transaction_is_journaled_once():
    first = entry(1)
    assert admit([first], entry(1)) == [first]


# ---- what settles an entry -------------------------------------------------------------------


def quote(next_nonce: int, ts: float = 2000.0, main: str = MAIN, chain_id: int = 31337) -> NonceQuote:
    return NonceQuote(main, {chain_id: next_nonce}, ts)


def test_a_quote_settles_an_entry_only_once_its_nonce_is_used():
    e = entry(1, nonce=4)
    assert not apply_quote([e], quote(4), MAIN) and not e.settled  # 4 is still the next nonce: unused
    assert apply_quote([e], quote(5), MAIN.upper().replace("0X", "0x")) and e.settled
    assert e.settled_by == {"main_nonce": 5, "quote_ts": 2000.0}


def test_a_quote_about_another_account_chain_or_time_settles_nothing():
    e = entry(1, nonce=4, quoted_at=5000.0)  # signed after the signer's quote of 5000 (its clock)
    assert not apply_quote([e], quote(9, ts=5000.0, main="0x" + "22" * 20), MAIN)
    assert not apply_quote([e], quote(9, ts=5000.0, chain_id=1), MAIN)
    assert not apply_quote([e], quote(9, ts=4999.0), MAIN)  # an older quote, replayed
    assert not e.settled
    assert apply_quote([e], quote(9, ts=5000.0), MAIN) and e.settled
    lagging = entry(2, nonce=4)  # no quote before signing: any signed quote counts, whatever its clock
    assert apply_quote([lagging], quote(5, ts=1.0), MAIN) and lagging.settled


def test_only_a_later_quote_showing_the_nonce_unused_reopens_an_entry():
    """A transaction dropped from the mempool frees its nonce: the pending count goes back down."""
    e = entry(1, nonce=4)
    apply_quote([e], quote(5, ts=2000.0), MAIN)
    assert not apply_quote([e], quote(4, ts=1999.0), MAIN) and e.settled  # an older quote, replayed
    assert not apply_quote([e], quote(6, ts=2001.0), MAIN) and e.settled
    assert apply_quote([e], quote(4, ts=2002.0), MAIN) and not e.settled


# ---- what counts as the signer's quote -------------------------------------------------------


def signer() -> tuple[Ed25519PrivateKey, str]:
    key = Ed25519PrivateKey.generate()
    return key, key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def signed_state(key: Ed25519PrivateKey, **quote_fields) -> dict:
    body = {"main_account": MAIN, "main_nonce": {"31337": 5}, "ts": 2000.0, **quote_fields}
    return {"frozen": False, **body, "nonce_sig": key.sign(signed_message(NONCE_DOMAIN, body)).hex()}


def test_a_quote_counts_only_if_the_signer_signed_exactly_it():
    key, public = signer()
    state = signed_state(key)
    assert verified_quote(state, public) == NonceQuote(MAIN, {31337: 5}, 2000.0)
    assert verified_quote({**state, "main_nonce": {"31337": 6}}, public) is None  # bumped by the bridge
    assert verified_quote({k: v for k, v in state.items() if k != "nonce_sig"}, public) is None
    assert verified_quote({**state, "nonce_sig": "00" * 64}, public) is None
    other, _ = signer()
    assert verified_quote(signed_state(other, main_nonce={"31337": 6}), public) is None  # another key
    assert verified_quote(state, None) is None
    assert verified_quote("not a dict", public) is None


@pytest.mark.parametrize("fields", [{"main_nonce": {"31337": True}}, {"main_nonce": {"31337": -1}},
                                    {"main_nonce": {"x": 1}}, {"main_nonce": [5]}, {"ts": "now"},
                                    {"main_account": None}, {"ts": True}])
def test_a_malformed_quote_counts_for_nothing_even_if_signed(fields):
    key, public = signer()
    assert verified_quote(signed_state(key, **fields), public) is None


# ---- storage ---------------------------------------------------------------------------------


def test_the_journal_is_a_private_file_that_survives_a_restart(tmp_path: Path):
    home = ensure_private_dir(tmp_path / "c")
    journal = Journal(home)
    journal.record(entry(1, nonce=3))
    journal.note_reply(entry(1).tx_hash, "error: signer unavailable")
    assert stat.S_IMODE((home / "journal.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((home / ".journal.lock").stat().st_mode) == 0o600
    [again] = Journal(home).unsettled()
    assert (again.request_id, again.nonce, again.reply) == ("req_1", 3, "error: signer unavailable")
    Journal(home).apply(quote(4), MAIN)
    assert Journal(home).unsettled() == [] and Journal(home).entries()[0].settled


def test_a_full_journal_refuses_before_anything_is_signed(tmp_path: Path):
    journal = Journal(ensure_private_dir(tmp_path / "c"), max_entries=4, max_unsettled=2)
    journal.record(entry(1))
    journal.check_room()
    journal.record(entry(2))
    with pytest.raises(JournalFull, match="2 approvals you signed are still unsettled"):
        journal.check_room()
    with pytest.raises(JournalFull):
        journal.record(entry(3))
    journal.apply(quote(1), MAIN)  # both were at nonce 0: used
    journal.check_room()


def test_an_unreadable_or_shared_journal_is_an_error_not_an_empty_one(tmp_path: Path):
    home = ensure_private_dir(tmp_path / "c")
    journal = Journal(home)
    journal.record(entry(1))
    os.chmod(home / "journal.json", 0o644)
    with pytest.raises(JournalError, match="not private"):
        journal.unsettled()
    os.chmod(home / "journal.json", 0o600)
    (home / "journal.json").write_text("{not json")
    with pytest.raises(JournalError, match="unreadable"):
        journal.check_room()


def test_two_writers_never_lose_each_others_entries(tmp_path: Path):
    """`run` and `outstanding` may write at once: every change is a locked read-modify-write."""
    home = ensure_private_dir(tmp_path / "c")

    def write(offset: int) -> None:
        journal = Journal(home)
        for i in range(20):
            journal.record(settle(entry(offset + i)))

    threads = [threading.Thread(target=write, args=(k * 100,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(Journal(home).entries()) == 60
    assert json.loads((home / "journal.json").read_text())["v"] == 1


def test_the_warning_says_what_to_do_and_writes_out_control_characters():
    e = entry(1, nonce=7)
    e.summary = "send 0.01 ETH to \x1b[2Adev-friend"
    text = "\n".join(warning_lines(e))
    assert "nonce: 7" in text and e.tx_hash in text and FRIEND in text and "0.01 ETH (10000000000000000 wei)" in text
    assert "with nonce 7" in text and "0-value" in text and "Do nothing" in text
    assert "\x1b" not in text and "\\x1b[2A" in text
