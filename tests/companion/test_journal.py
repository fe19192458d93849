"""The approval journal on its own: its bound, what settles an entry, what counts as a signed quote."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import stat
import threading
import time
import types
from dataclasses import asdict
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings, strategies as st

from companion_bridge.companion import watch as watch_module
from companion_bridge.companion.journal import (
    CONFIRM_QUOTES,
    CONFIRM_SECONDS,
    Entry,
    Journal,
    JournalError,
    JournalFull,
    admit,
    apply_quote,
)
from companion_bridge.companion.outstanding import warning_lines
from companion_bridge.companion.quotes import NonceQuote, verified_quote
from companion_bridge.companion.watch import Watch
from policies.kernel.files import ensure_private_dir, write_private_file
from policies.kernel.text import cells
from signer.wire.messages import NONCE_DOMAIN, signed_message

MAIN = "0x1111111111111111111111111111111111111111"
FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def entry(n: int, *, nonce: int = 0, chain_id: int = 31337, quoted_at: float | None = None) -> Entry:
    return Entry(
        f"req_{n}",
        chain_id,
        nonce,
        f"0x{n:064x}",
        FRIEND,
        str(10**16),
        f"send 0.01 ETH ({n})",
        1000.0,
        quoted_at=quoted_at,
    )


def settle(e: Entry, ts: float = 2000.0) -> Entry:
    e.settled_at, e.settled_by = ts, {"main_nonce_mined": e.nonce + 1, "quote_ts": ts}
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
            assert all(
                before.index(d) < before.index(k) for d in dropped for k in kept_settled
            )  # ...oldest first
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


def quote(
    mined: int, ts: float = 2000.0, main: str = MAIN, chain_id: int = 31337, pending: int | None = None
) -> NonceQuote:
    """A verified quote: `mined` transactions mined, `pending` (default: as many) counting the mempool."""
    return NonceQuote(main, {chain_id: mined if pending is None else pending}, ts, {chain_id: mined})


def apply(entries: list[Entry], q: NonceQuote, main: str = MAIN) -> bool:
    return apply_quote(entries, q, main, now=q.ts)  # as if it arrived as it was made


def test_a_quote_settles_an_entry_only_once_its_nonce_is_mined():
    e = entry(1, nonce=4)
    apply([e], quote(4, ts=1990.0))  # 4 is still the next nonce: unused
    assert not e.settled
    apply([e], quote(4, ts=1995.0, pending=5))  # a transaction at nonce 4 in the mempool: not yet
    assert not e.settled
    assert apply([e], quote(5), MAIN.upper().replace("0X", "0x")) and e.settled
    assert e.settled_by == {"main_nonce_mined": 5, "quote_ts": 2000.0}


def test_a_quote_without_a_mined_count_settles_nothing():
    """An older signer's quote counts the mempool only: a held transaction sitting in a mempool would
    settle its own entry, and could be sent again after an eviction."""
    e = entry(1, nonce=4)
    assert not apply([e], NonceQuote(MAIN, {31337: 9}, 2000.0)) and not e.settled


def test_a_quote_about_another_account_chain_or_time_settles_nothing():
    e = entry(1, nonce=4, quoted_at=5000.0)  # signed with the signer's quote of 5000 (its clock)
    assert not apply([e], quote(9, ts=5000.0, main="0x" + "22" * 20))
    assert not apply([e], quote(9, ts=5000.0, chain_id=1))
    assert not apply([e], quote(9, ts=4999.0))  # an older quote, replayed
    assert not e.settled
    assert apply([e], quote(9, ts=5000.0)) and e.settled


def test_R5_an_entry_signed_without_a_fresh_quote_is_settled_only_by_a_fresh_one():
    """Review R5: with no quote of its own to compare with, any signed quote of any age settled it."""
    e = entry(1, nonce=5)  # signed at the request's own nonce: no fresh quote
    assert not apply_quote([e], quote(6, ts=1_000_000.0), MAIN, now=2_000_000_000.0) and not e.settled
    assert apply_quote([e], quote(6, ts=2_000_000_000.0), MAIN, now=2_000_000_030.0) and e.settled


def test_R3_a_replayed_older_quote_never_settles_or_resettles_an_entry():
    """Review R3: after a newer quote showed the nonce unmined, the bridge replayed the older
    settling quote and the entry settled again. Each entry now takes only quotes newer than any
    it has seen, so the replay says nothing."""
    e = entry(1, nonce=5, quoted_at=1000.0)
    mined = quote(6, ts=2000.0)
    reorged = quote(5, ts=3000.0)  # a newer quote: nonce 5 not mined after all
    assert apply([e], mined) and e.settled
    assert not apply([e], quote(6, ts=1999.0)) and e.confirmed == 0  # older: ignored
    assert apply([e], reorged) and not e.settled
    assert not apply([e], mined) and not e.settled  # the replay
    assert not apply([e], quote(6, ts=3000.0)) and not e.settled  # nor one no newer than the newest seen
    assert apply([e], quote(6, ts=3001.0)) and e.settled  # a genuinely newer one does


def test_a_settled_entry_is_rechecked_until_quotes_have_confirmed_it_for_a_while(tmp_path: Path):
    e = entry(1, nonce=5, quoted_at=1000.0)
    apply([e], quote(6, ts=2000.0))
    assert e.settled and not e.final
    for i, ts in enumerate((2100.0, 2200.0, 2300.0), start=1):
        apply([e], quote(6 + i, ts=ts))
        assert e.confirmed == i and not e.final  # three quotes, but not yet long enough
    apply([e], quote(9, ts=2000.0 + CONFIRM_SECONDS))
    assert e.final and e.confirmed >= CONFIRM_QUOTES
    journal = Journal(ensure_private_dir(tmp_path / "c"))
    journal.record(e)
    journal.record(settle(entry(2, nonce=6)))
    assert [x.request_id for x in journal.watched()] == ["req_2"]  # only what is not final costs a quote


# ---- what counts as the signer's quote -------------------------------------------------------


def signer() -> tuple[Ed25519PrivateKey, str]:
    key = Ed25519PrivateKey.generate()
    return key, key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def signed_state(key: Ed25519PrivateKey, *, legacy: bool = False, **quote_fields) -> dict:
    """An `approvals.state` reply as the signer signs it (`legacy`: without the mined count)."""
    body = {
        "main_account": MAIN,
        "main_nonce": {"31337": 5},
        "ts": 2000.0,
        **({} if legacy else {"main_nonce_mined": {"31337": 5}}),
        **quote_fields,
    }
    return {"frozen": False, **body, "nonce_sig": key.sign(signed_message(NONCE_DOMAIN, body)).hex()}


def test_a_quote_counts_only_if_the_signer_signed_exactly_it():
    key, public = signer()
    state = signed_state(key)
    assert verified_quote(state, public) == NonceQuote(MAIN, {31337: 5}, 2000.0, {31337: 5})
    assert verified_quote({**state, "main_nonce": {"31337": 6}}, public) is None  # bumped by the bridge
    assert verified_quote({**state, "main_nonce_mined": {"31337": 6}}, public) is None
    assert (
        verified_quote({k: v for k, v in state.items() if k != "main_nonce_mined"}, public) is None
    )  # stripped
    assert verified_quote({k: v for k, v in state.items() if k != "nonce_sig"}, public) is None
    assert verified_quote({**state, "nonce_sig": "00" * 64}, public) is None
    other, _ = signer()
    assert verified_quote(signed_state(other, main_nonce={"31337": 6}), public) is None  # another key
    assert verified_quote(state, None) is None
    assert verified_quote("not a dict", public) is None
    # an older signer's three-field quote still verifies, with no mined count: it never settles anything
    assert verified_quote(signed_state(key, legacy=True), public) == NonceQuote(MAIN, {31337: 5}, 2000.0)


@pytest.mark.parametrize(
    "fields",
    [
        {"main_nonce": {"31337": True}},
        {"main_nonce": {"31337": -1}},
        {"main_nonce": {"x": 1}},
        {"main_nonce": [5]},
        {"ts": "now"},
        {"main_account": None},
        {"ts": True},
        {"main_nonce_mined": None},
        {"main_nonce_mined": {"31337": -1}},
        {"main_nonce_mined": {"1": "5"}},
    ],
)
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
    Journal(home).apply(quote(4, ts=time.time()), MAIN)
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
    journal.apply(quote(1, ts=time.time()), MAIN)  # both were at nonce 0: mined
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
    assert (
        "nonce: 7" in text
        and e.tx_hash in text
        and FRIEND in text
        and "0.01 ETH (10000000000000000 wei)" in text
    )
    assert "with nonce 7" in text and "0-value" in text and "Do nothing" in text
    assert "\x1b" not in text and "\\x1b[2A" in text


def write_journal(home: Path, body: object) -> None:
    write_private_file(home / "journal.json", (body if isinstance(body, str) else json.dumps(body)).encode())


@pytest.mark.parametrize(
    "change, why",
    [
        ({"value": "lots"}, "value is not an amount of wei"),
        ({"nonce": "5"}, "nonce is not a nonce"),
        ({"nonce": True}, "nonce is not a nonce"),
        ({"chain_id": -1}, "chain_id is not a chain id"),
        ({"signed_at": "yesterday"}, "signed_at is not a time"),
        ({"tx_hash": "0x12"}, "tx_hash is not a transaction hash"),
        ({"settled_by": {"main_nonce_mined": "6", "quote_ts": 1.0}}, "settled_by is not"),
        ({"settled_at": 1.0}, "settled_at and settled_by disagree"),
        ({"reply": ["x"]}, "reply is not text"),
    ],
)
def test_R7_a_type_corrupt_journal_is_a_worded_error(tmp_path: Path, change: dict, why: str):
    """Review R7: `value: "lots"` or a string nonce loaded fine and crashed `outstanding` later."""
    home = ensure_private_dir(tmp_path / "c")
    write_journal(home, {"v": 1, "entries": [{**asdict(entry(1, nonce=5)), **change}]})
    with pytest.raises(JournalError, match=f"unreadable \\(entry 0: {why}"):
        Journal(home).entries()


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"v": 2, "entries": []},
        {"v": 1, "entries": {}},
        {"v": 1, "entries": [7]},
        {"v": 1, "entries": [{"request_id": "req_1"}]},
        "[" * 300_000,
    ],
)
def test_a_journal_of_the_wrong_shape_or_nested_too_deep_is_a_worded_error(tmp_path: Path, body):
    """Review deep_journal.py: plain json.loads on 300 000 brackets, with eth_account's recursion
    limit in force, can crash the process; the journal is read with policies.kernel.safejson."""
    importlib.import_module("eth_account")  # as in the CLI: it raises the recursion limit

    home = ensure_private_dir(tmp_path / "c")
    write_journal(home, body)
    with pytest.raises(JournalError, match="unreadable"):
        Journal(home).entries()


def test_an_entry_settled_by_a_mempool_count_is_checked_again(tmp_path: Path):
    """An entry written before quotes had a mined count was settled by the pending count: reopened."""
    home = ensure_private_dir(tmp_path / "c")
    old = {**asdict(entry(1, nonce=5)), "settled_at": 1.0, "settled_by": {"main_nonce": 6, "quote_ts": 1.0}}
    for name in ("seen_ts", "confirmed"):
        old.pop(name)
    write_journal(home, {"v": 1, "entries": [old]})
    [again] = Journal(home).unsettled()
    assert again.request_id == "req_1" and again.confirmed == 0


def test_the_companion_directory_must_be_private_and_file_errors_are_worded(tmp_path: Path):
    """Review item 6: in a group-writable directory another user can delete the journal, and every
    outstanding approval with it; and an OSError on the lock or temp file escaped unworded."""
    home = ensure_private_dir(tmp_path / "c")
    Journal(home).record(entry(1))
    os.chmod(home, 0o770)
    with pytest.raises(JournalError, match="mode 0770: others could delete"):
        Journal(home).entries()
    os.chmod(home, 0o700)
    (home / ".journal.lock").unlink()
    (home / ".journal.lock").symlink_to(tmp_path / "elsewhere")  # O_NOFOLLOW: ELOOP
    with pytest.raises(JournalError, match="cannot be used"):
        Journal(home).record(entry(2))
    (home / ".journal.lock").unlink()
    os.mkdir(home / f".journal.json.{os.getpid()}.tmp")  # the temp file cannot be written
    with pytest.raises(JournalError, match="cannot be used"):
        Journal(home).record(entry(2))
    with pytest.raises(JournalError, match="cannot be read"):
        Journal(home / "gone").entries()
    os.rmdir(home / f".journal.json.{os.getpid()}.tmp")
    assert [e.request_id for e in Journal(home).entries()] == ["req_1"]


def test_R6_bridge_text_cannot_start_a_row_of_its_own():
    """Review R6: a reply padded to 80 columns put a fake "settled: ... nothing to do" row under the
    banner. It is collapsed, capped and wrapped by the companion behind a gutter."""
    e = entry(1, nonce=5)
    fake = "settled: nonce 5 is used (signed quote: next nonce 6) - nothing to do"
    for padding in (" " * 44, "x" * 72 + " ", "\n", "\t" * 9):
        e.reply = "error: x" + padding + fake + " " + "y" * 400
        lines = warning_lines(e)
        at = lines.index("  reply through the bridge (not signed by the signer: no proof):")
        rows = lines[at + 1 : lines.index(next(x for x in lines[at + 1 :] if not x.startswith("      | ")))]
        assert rows and all(len(row) <= 72 for row in rows)
        assert not any(line.startswith("settled") for line in lines)
        assert sum(len(row) - 8 for row in rows) <= 200  # capped


def test_wide_bridge_text_is_wrapped_by_terminal_cells_not_characters():
    """72 CJK characters are 144 cells: wrapped by characters, a row would overflow an 80-column
    terminal and its tail start a row of its own."""
    e = entry(1, nonce=5)
    e.reply = "\u65e5" * 72 + " settled: nonce 5 is used - nothing to do"
    lines = warning_lines(e)
    at = lines.index("  reply through the bridge (not signed by the signer: no proof):")
    rows = [line for line in lines[at + 1 :] if line.startswith("      | ")]
    assert rows and all(sum(cells(ch) for ch in row) <= 72 for row in rows)


def test_R4_the_last_quote_time_never_goes_backwards(tmp_path: Path):
    """Review R4: a replayed old quote set `last_quote` back, and an approval signed then was
    journaled as quoted at that old time, so quotes from before it could settle it."""
    key, public = signer()
    w = Watch(wallet_at(tmp_path, public), None, print)
    assert w.settle(signed_state(key, ts=5000.0)) is not None
    w.settle(signed_state(key, ts=10.0))  # the bridge replays a quote from long ago
    assert w.last_quote == 5000.0


def test_R5_a_stale_quote_does_not_settle_through_the_watch(tmp_path: Path):
    key, public = signer()
    old = signed_state(key, main_nonce={"31337": 6}, main_nonce_mined={"31337": 6}, ts=1_000_000.0)

    async def call(method, **kw):
        return old  # the bridge answers every approvals.state with the same old quote

    w = Watch(wallet_at(tmp_path, public), call, print)
    w.journal.record(entry(1, nonce=5))  # signed without a fresh quote
    assert [e.request_id for e in asyncio.run(w.check(warn=False))] == ["req_1"]
    fresh = signed_state(key, main_nonce={"31337": 6}, main_nonce_mined={"31337": 6}, ts=time.time())

    async def honest(method, **kw):
        return fresh

    w._call = honest
    assert asyncio.run(w.check(warn=False)) == []


def test_pushed_state_frames_start_at_most_one_check_at_a_time(tmp_path: Path, monkeypatch):
    """Review item 7: every pushed state frame started a check of its own, each re-printing every banner."""
    monkeypatch.setattr(watch_module, "PUSH_INTERVAL", 0.2)
    key, public = signer()
    calls: list[float] = []
    printed: list[str] = []

    async def call(method, **kw):
        calls.append(time.monotonic())
        await asyncio.sleep(0.05)
        return signed_state(key, ts=time.time())  # nonce 5 unmined: it stays outstanding

    async def scenario() -> float:
        w = Watch(wallet_at(tmp_path, public), call, printed.append)
        w.journal.record(entry(1, nonce=5))
        start = time.monotonic()
        for _ in range(200):
            w.poke()
            await asyncio.sleep(0.001)
        span = time.monotonic() - start
        if w._pushed is not None:
            await asyncio.wait_for(w._pushed, 20)  # the checks the pokes owed, the trailing one included
        w.stop()
        return span

    span = asyncio.run(scenario())
    # One check per 0.2 s slot the pokes reach, plus the one a poke during a check's wait owes after
    # it: a poke at 0.26 s (after the check at 0.2 s began its round) is answered by a check at 0.6 s.
    assert 1 <= len(calls) <= span / 0.2 + 3, (len(calls), span)  # not 200
    assert all(b - a >= 0.19 for a, b in zip(calls, calls[1:]))
    assert sum("OUTSTANDING SIGNED TRANSACTION" in line for line in printed) == len(calls)


def wallet_at(tmp_path: Path, signer_key: str):
    home = ensure_private_dir(tmp_path / "c")
    return types.SimpleNamespace(home=home, state={"signer_key": signer_key}, main_address=MAIN)
