"""The single-commit signing path, the writer's inline commit and the in-place audit anchor.

An allowed request is decided, reserved, built and signed in memory, then written in ONE
transaction; nothing leaves the signer before that commit. These tests break the commit on
purpose (an SQLite trigger that fails inside the real transaction) and check that a failed
record sends nothing, spends nothing and leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from policies.decode import decode
from policies.intent import Call
from policies.kernel.keccak import keccak256
from signer.ledger import DAY, SignerState
from signer.store import audit as audit_store
from signer.store.db import connect
from signer.store.writer import Writer, WriterClosed
from signer.tier1.policy_live import load_ledger
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.protocol import ErrorCode
from tests.conftest import (
    FRIEND,
    InProcessSigner,
    as_json,
    audit_keys,
    balance,
    reverter_policy,
    throwaway_audit_keys,
    wait_receipt,
)

CENT = 10**16  # the dev policy: 0.01 ETH per transaction, 0.05 ETH per 24 h
WINDOW = 5 * CENT
# A real failure inside the real transaction: json() of non-JSON raises when the trigger fires.
FAIL_TRIGGER = (
    "CREATE TRIGGER fail_record BEFORE INSERT ON requests WHEN NEW.idempotency_key GLOB 'fail-*'"
    " BEGIN SELECT json('injected failure'); END"
)


def transfer(value: int = CENT) -> dict:
    return {"chain_id": 31337, "to": FRIEND, "value": str(value)}


def audit_rows(db: Path) -> list[tuple[int, str, dict]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [
            (seq, kind, json.loads(body))
            for seq, kind, body in conn.execute("SELECT seq, kind, body FROM audit ORDER BY seq")
        ]
    finally:
        conn.close()


def records_of(db: Path, request_id: str) -> list[tuple[int, str]]:
    return [(seq, kind) for seq, kind, body in audit_rows(db) if body.get("request_id") == request_id]


# ---- the writer ---------------------------------------------------------------------------------


def _table(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    conn.executescript(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);"
        "CREATE TABLE parent(id INTEGER PRIMARY KEY);"
        "CREATE TABLE child(pid INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);"
    )
    return conn


def _committed(path: Path) -> list[int]:
    other = connect(path)  # a second connection sees only what was committed
    try:
        return [n for (n,) in other.execute("SELECT n FROM t ORDER BY id")]
    finally:
        other.close()


def _insert(n: int):
    def unit(conn: sqlite3.Connection) -> int:
        conn.execute("INSERT INTO t(n) VALUES(?)", (n,))
        return threading.get_ident()

    return unit


def test_inline_commit_runs_on_the_callers_thread_only_when_asked(tmp_path):
    conn = _table(tmp_path / "w.db")
    writer = Writer(conn)

    async def main() -> tuple[int, int]:
        return await writer.run(_insert(1), inline=True), await writer.run(_insert(2))

    try:
        inline_thread, queued_thread = asyncio.run(main())
    finally:
        writer.close()
    assert inline_thread == threading.get_ident()
    assert queued_thread != threading.get_ident()
    assert _committed(tmp_path / "w.db") == [1, 2]


def test_inline_waits_its_turn_behind_a_busy_writer(tmp_path):
    conn = _table(tmp_path / "w.db")
    writer = Writer(conn)
    inside, gate = threading.Event(), threading.Event()

    def slow(c: sqlite3.Connection) -> int:
        inside.set()
        assert gate.wait(10)
        return _insert(1)(c)

    async def main() -> tuple[int, int]:
        first = asyncio.ensure_future(writer.run(slow))
        assert await asyncio.to_thread(inside.wait, 10)  # the writer thread is busy with `first`
        second = asyncio.ensure_future(writer.run(_insert(2), inline=True))
        await asyncio.sleep(0)
        assert not second.done()  # not committed on the loop ahead of `first`
        gate.set()
        return await first, await second

    try:
        a, b = asyncio.run(main())
    finally:
        writer.close()
    assert a == b != threading.get_ident()  # both went through the thread, in order
    assert _committed(tmp_path / "w.db") == [1, 2]


@pytest.mark.parametrize("inline", [True, False])
def test_a_failing_unit_rolls_back_alone(tmp_path, inline):
    conn = _table(tmp_path / "w.db")
    writer = Writer(conn)

    def bad(c: sqlite3.Connection) -> None:
        c.execute("INSERT INTO t(n) VALUES(3)")
        raise ValueError("refused")

    async def main() -> None:
        with pytest.raises(ValueError, match="refused"):
            await writer.run(bad, inline=inline)
        await writer.run(_insert(4), inline=inline)

    try:
        asyncio.run(main())
    finally:
        writer.close()
    assert _committed(tmp_path / "w.db") == [4]


@pytest.mark.parametrize("inline", [True, False])
def test_a_commit_that_fails_fails_closed(tmp_path, inline):
    """COMMIT itself refuses (a deferred foreign key): the caller gets an error and nothing is kept."""
    conn = _table(tmp_path / "w.db")
    rollbacks: list[int] = []
    writer = Writer(conn, on_rollback=lambda: rollbacks.append(1))

    def orphan(c: sqlite3.Connection) -> None:
        c.execute("INSERT INTO t(n) VALUES(5)")
        c.execute("INSERT INTO child(pid) VALUES(99)")

    async def main() -> None:
        with pytest.raises(WriterClosed, match="FOREIGN KEY"):
            await writer.run(orphan, inline=inline)
        await writer.run(_insert(6), inline=inline)

    try:
        asyncio.run(main())
    finally:
        writer.close()
    assert rollbacks and _committed(tmp_path / "w.db") == [6]


units = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=12)  # (fails, inline)


@settings(max_examples=40, deadline=None)
@given(groups=st.lists(units, min_size=1, max_size=6))
def test_every_unit_commits_in_submission_order_and_gets_its_own_result(groups):
    """Any mix of inline and queued units, concurrent or not: the committed rows are exactly the
    successful units, in the order they were submitted, and each caller gets its own outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = _table(Path(tmp) / "w.db")
        writer = Writer(conn)
        expected: list[int] = []

        def unit(n: int, fails: bool):
            def run(c: sqlite3.Connection) -> int:
                c.execute("INSERT INTO t(n) VALUES(?)", (n,))
                if fails:
                    raise KeyError(n)
                return n

            return run

        async def main() -> None:
            n = 0
            for group in groups:
                calls = []
                for fails, inline in group:
                    n += 1
                    calls.append(writer.run(unit(n, fails), inline=inline))
                    if not fails:
                        expected.append(n)
                results = await asyncio.gather(*calls, return_exceptions=True)
                first = n - len(group) + 1
                for i, ((fails, _), got) in enumerate(zip(group, results)):
                    assert (
                        (isinstance(got, KeyError) and got.args == (first + i,))
                        if fails
                        else got == first + i
                    )

        try:
            asyncio.run(main())
        finally:
            writer.close()
            conn.close()
        assert _committed(Path(tmp) / "w.db") == expected


# ---- the audit anchor ---------------------------------------------------------------------------


def test_anchor_is_rewritten_in_place_at_a_fixed_width(tmp_path):
    anchor = tmp_path / "audit.anchor"
    anchor.write_text('{"seq": 0, "hash": "x"}')  # an anchor as an older signer wrote it
    anchor.chmod(0o600)
    inode = anchor.stat().st_ino
    conn = connect(tmp_path / "a.db")
    audit_store.ensure_schema(conn)
    log = audit_store.AuditLog(conn, anchor, keys=throwaway_audit_keys())
    for i in range(3):
        conn.execute("BEGIN IMMEDIATE")
        log.append("test.event", {"i": i})
        conn.execute("COMMIT")
        log.write_anchor()
    info = anchor.stat()
    assert info.st_ino == inode and info.st_size == audit_store.ANCHOR_BYTES
    assert stat.S_IMODE(info.st_mode) == 0o600
    written = json.loads(anchor.read_text())
    assert (written["seq"], written["hash"]) == (3, log.head[1])
    assert audit_store.verify(conn, anchor, keys=throwaway_audit_keys()).ok

    anchor.write_bytes(b"{" + b"x" * 300)  # tampered: longer than any anchor the signer writes
    log.write_anchor()
    report = audit_store.verify(conn, anchor, keys=throwaway_audit_keys())
    assert not report.ok and "unreadable" in report.problems[0]


def test_anchor_refuses_to_follow_a_symlink(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / "audit.anchor").symlink_to(target)
    conn = connect(tmp_path / "a.db")
    audit_store.ensure_schema(conn)
    with pytest.raises(OSError):
        audit_store.AuditLog(conn, tmp_path / "audit.anchor", keys=throwaway_audit_keys()).write_anchor()
    assert target.read_text() == "keep"


# ---- the engine, on a real daemon process and a real chain --------------------------------------


def test_a_signed_request_is_recorded_decided_then_signed_in_one_piece(stack, anvil):
    stack.funded_session_key()
    token = stack.client_token("bot")
    result = stack.call_sync(
        token, "sign.request", {"idempotency_key": new_idempotency_key(), "intent": transfer()}
    )
    assert result["status"] == "signed", result
    assert wait_receipt(anvil, result["tx_hash"])["status"] == "0x1"
    stack.stop()

    conn = sqlite3.connect(f"file:{stack.paths.db}?mode=ro", uri=True)
    status, raw_tx, tx_hash = conn.execute(
        "SELECT status, raw_tx, tx_hash FROM requests WHERE request_id=?", (result["request_id"],)
    ).fetchone()
    spends = conn.execute("SELECT state FROM spends WHERE request_id=?", (result["request_id"],)).fetchall()
    conn.close()
    assert status in ("signed", "confirmed") and tx_hash == result["tx_hash"]
    assert "0x" + keccak256(raw_tx).hex() == tx_hash  # the exact bytes that went to the chain
    assert spends == [("committed",)]
    (s1, k1), (s2, k2), *rest = records_of(stack.paths.db, result["request_id"])
    assert (k1, k2) == ("sign.decided", "sign.signed") and s2 == s1 + 1
    assert [k for _, k in rest] in ([], ["tx.receipt"])
    verified = stack.owlia("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_record_that_cannot_be_written_sends_nothing_and_costs_nothing(stack, anvil):
    key = stack.funded_session_key()
    token = stack.client_token("bot")
    nonce, before = anvil_nonce(anvil, key["address"]), balance(anvil, FRIEND)
    db = sqlite3.connect(stack.paths.db)
    db.execute(FAIL_TRIGGER)
    db.commit()

    with pytest.raises(SignerError) as failed:
        stack.call_sync(token, "sign.request", {"idempotency_key": "fail-0001", "intent": transfer()})
    assert failed.value.code == ErrorCode.UNAVAILABLE and "nothing was sent" in failed.value.message
    assert anvil_nonce(anvil, key["address"]) == nonce and balance(anvil, FRIEND) == before
    assert db.execute("SELECT count(*) FROM requests WHERE idempotency_key='fail-0001'").fetchone() == (0,)
    assert not any("fail-0001" in json.dumps(body) for _, _, body in audit_rows(stack.paths.db))

    # The failed request reserved nothing and burned no nonce: the whole window is still there.
    results = [
        stack.call_sync(
            token, "sign.request", {"idempotency_key": new_idempotency_key(), "intent": transfer()}
        )
        for _ in range(6)
    ]
    assert [r["status"] for r in results] == ["signed"] * 5 + ["pending_approval"]
    assert results[5]["rule_id"] == "limit.window.24h"
    assert sorted(r["nonce"] for r in results[:5]) == list(range(nonce, nonce + 5))
    for r in results[:5]:
        assert wait_receipt(anvil, r["tx_hash"])["status"] == "0x1"

    # Nothing consumed the key: with the disk healthy again it is decided afresh, not replayed.
    db.execute("DROP TRIGGER fail_record")
    db.commit()
    db.close()
    again = stack.call_sync(token, "sign.request", {"idempotency_key": "fail-0001", "intent": transfer()})
    assert again["status"] == "pending_approval" and "replayed" not in again
    stack.stop()
    verified = stack.owlia("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_simulation_failure_after_the_decision_is_recorded_with_it(make_stack, anvil, tmp_path):
    contract, policy = reverter_policy(anvil, tmp_path)
    stack = make_stack(policy=policy).start()
    stack.funded_session_key()
    token = stack.client_token("bot")
    params = {
        "idempotency_key": new_idempotency_key(),
        "intent": {"chain_id": 31337, "to": contract, "value": "0", "data": "0x12345678"},
    }
    result = stack.call_sync(token, "sign.request", params)
    assert result["status"] == "denied" and result["rule_id"] == "simulation.reverted", result
    replay = stack.call_sync(token, "sign.request", params)
    assert replay["replayed"] is True and replay["request_id"] == result["request_id"]

    rows = {seq: (kind, body) for seq, kind, body in audit_rows(stack.paths.db)}
    (s1, k1), (s2, k2) = records_of(stack.paths.db, result["request_id"])
    assert (k1, k2) == ("sign.decided", "sign.abandoned") and s2 == s1 + 1
    assert rows[s1][1]["decision"]["outcome"] == "allow"  # the policy said yes; the chain said no
    assert rows[s2][1]["rule_id"] == "simulation.reverted"


def anvil_nonce(anvil, address: str) -> int:
    from bot.devchain import rpc

    return int(rpc(anvil.url, "eth_getTransactionCount", [address, "latest"]), 16)


# ---- limits hold through failed records: a property over an in-process daemon ------------------


def _window_spent(ledger, now: float) -> int:
    decoded = decode(Call(chain_id=31337, to=FRIEND.lower(), value=1))
    return ledger.context(decoded, {DAY}, now, SignerState(None, None, False)).spent[(31337, "native", DAY)]


requests = st.lists(
    st.tuples(st.integers(1, 12), st.booleans()), min_size=1, max_size=12
)  # (milli-ETH, fails)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=requests, concurrent=st.booleans())
def test_failed_records_never_leak_reservations_or_exceed_limits(anvil, batch, concurrent):
    """Requests, some of whose records fail to commit, sent one by one or all at once: what was
    signed fits the limits, failures leave no trace, and the live ledger equals the durable one."""
    with tempfile.TemporaryDirectory() as tmp:
        home = InProcessSigner(Path(tmp), anvil.url)
        try:
            asyncio.run(_run_batch(home, batch, concurrent))
        finally:
            shutil.rmtree(home.sockdir, ignore_errors=True)


async def _run_batch(home: InProcessSigner, batch: list[tuple[int, bool]], concurrent: bool) -> None:
    daemon = home.daemon()
    await daemon.start()
    try:
        admin = home.paths.admin_token.read_text().strip()
        async with SignerClient(home.paths.socket, admin) as client:
            await client.call(
                "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
            )
        db = sqlite3.connect(home.paths.db)
        db.execute(FAIL_TRIGGER)
        db.commit()
        db.close()

        async def send(i: int, milli: int, fails: bool) -> dict | SignerError:
            key = f"{'fail' if fails else 'pass'}-{i:04d}"
            async with SignerClient(home.paths.socket, home.token) as c:
                try:
                    return as_json(await c.sign(transfer(milli * 10**15), idempotency_key=key))
                except SignerError as exc:
                    return exc

        if concurrent:
            results = await asyncio.gather(*(send(i, m, f) for i, (m, f) in enumerate(batch)))
        else:
            results = [await send(i, m, f) for i, (m, f) in enumerate(batch)]
        now = time.time()
        live = _window_spent(daemon.ledger, now)
    finally:
        await daemon.stop()

    signed = 0
    for (milli, fails), result in zip(batch, results):
        if fails:
            assert isinstance(result, SignerError) and result.code == ErrorCode.UNAVAILABLE
            continue
        assert isinstance(result, dict), result
        if result["status"] == "signed":
            signed += milli * 10**15
            assert milli * 10**15 <= CENT
        else:
            assert result["status"] == "pending_approval", result
    assert signed <= WINDOW
    reader = connect(home.paths.db, readonly=True)
    try:
        durable = _window_spent(load_ledger(reader, now - 7 * DAY), now)
        assert reader.execute(
            "SELECT count(*) FROM requests WHERE idempotency_key GLOB 'fail-*'"
        ).fetchone() == (0,)
        assert audit_store.verify(reader, home.paths.anchor, keys=audit_keys(home.paths)).ok
    finally:
        reader.close()
    assert live == durable == signed  # no reservation of a failed record survives, in memory or on disk
    bodies = [json.dumps(body) for _, _, body in audit_rows(home.paths.db)]
    assert not any('"fail-' in b for b in bodies)
