"""WAL checkpoints off the request path (signer.store.checkpoint) and what they must not change.

The writer's commits stay the only durable step; the background thread only copies committed WAL
frames into the database. These tests check, on real SQLite files, that the WAL is restarted (so
it stays small) without SQLite's own checkpoint inside a commit, that every committed row
survives, and that the thread and its connection go away with the writer.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from signer.store import audit as audit_store
from signer.store.checkpoint import BACKSTOP_PAGES, DEFAULT_EVERY, Checkpointer, database_file
from signer.store.db import connect
from signer.store.writer import Writer
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from tests.conftest import FRIEND, InProcessSigner, as_json, audit_keys

ROW = "x" * 3000  # about one WAL frame per row, plus the table's pages


def transfer(value: int) -> dict:
    return {"chain_id": 31337, "to": FRIEND, "value": str(value)}


def _db(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    return conn


def _insert(conn: sqlite3.Connection) -> int:
    return conn.execute("INSERT INTO t(body) VALUES(?)", (ROW,)).lastrowid


def _wal_frames(path: Path) -> int:
    """Frames in the WAL now, as a separate connection sees them (a PASSIVE checkpoint reports it)."""
    probe = sqlite3.connect(path, isolation_level=None)
    try:
        return probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    finally:
        probe.close()


def _settle(checkpointer: Checkpointer, quiet: float = 0.05, timeout: float = 10.0) -> None:
    """Wait until the checkpoint thread has made no pass for `quiet` seconds."""
    deadline = time.monotonic() + timeout
    last, since = checkpointer.passes, time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.005)
        if checkpointer.passes != last:
            last, since = checkpointer.passes, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise AssertionError("the checkpoint thread never went quiet")


async def _commit_all(writer: Writer, n: int, gap: float = 0.0) -> list[int]:
    """`n` commits one after another, as a lone client's requests arrive (`gap`: its think time)."""
    ids = []
    for _ in range(n):
        ids.append(await writer.run(_insert, inline=True))
        await asyncio.sleep(gap)
    return ids


def _wal_salt(path: Path) -> int:
    """Salt-1 of the WAL header: SQLite adds one to it each time a writer restarts the WAL."""
    with open(path.parent / (path.name + "-wal"), "rb") as wal:
        return int.from_bytes(wal.read(32)[16:20], "big")


async def _commit_until(writer: Writer, done, *, most: int, gap: float) -> int:
    """Lone-client commits (`gap`: its think time) until `done()`; how many it took, at most `most`."""
    for n in range(most):
        if done():
            return n
        await writer.run(_insert, inline=True)
        await asyncio.sleep(gap)
    raise AssertionError(f"not done after {most} commits")


def test_background_checkpoints_restart_the_wal_without_sqlites_own(tmp_path):
    """The thread restarts the WAL, more than once, while SQLite's own checkpoint waits for the
    backstop. A restart needs a write to begin after a pass has copied every frame; while each pass
    (two fsyncs) outlasts the gap between commits, as on a loaded disk, no write can, and the WAL
    grows meanwhile. So how many commits two restarts take depends on the disk: the client commits
    until SQLite's own count (salt-1 in the WAL header) and the thread's both show two."""
    path = tmp_path / "w.db"
    conn = _db(path)
    salt = _wal_salt(path)
    writer = Writer(conn, checkpoint_every=8)
    checkpointer = writer._checkpointer
    assert checkpointer is not None

    def restarted_by_sqlite() -> int:
        return (_wal_salt(path) - salt) % 2**32

    try:
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
        asyncio.run(
            _commit_until(
                writer, lambda: restarted_by_sqlite() >= 2 and checkpointer.restarts >= 2, most=500, gap=0.001
            )
        )
        by_sqlite = restarted_by_sqlite()
    finally:
        writer.close()
        conn.close()
    # At most 500 commits of at most 4 frames each, far below the backstop: only the background
    # thread can have restarted the WAL (the control below shows nothing else does), and SQLite
    # itself counted the restarts, each of which writes the WAL again from its start.
    assert 4 * 500 < BACKSTOP_PAGES
    assert by_sqlite >= 2 and checkpointer.restarts >= 2


def test_without_the_thread_sqlite_checkpoints_as_before(tmp_path):
    path = tmp_path / "w.db"
    conn = _db(path)
    writer = Writer(conn, checkpoint_every=None)
    try:
        assert writer._checkpointer is None
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        asyncio.run(_commit_all(writer, 61))
        frames = _wal_frames(path)
    finally:
        writer.close()
        conn.close()
    assert frames > 61  # nothing restarted the WAL: the control for the test above


def test_no_checkpoint_thread_for_a_database_without_a_wal(tmp_path):
    memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    rollback_journal = sqlite3.connect(tmp_path / "j.db", isolation_level=None, check_same_thread=False)
    try:
        assert database_file(memory) is None
        assert database_file(rollback_journal) is None
        writer = Writer(rollback_journal)
        assert writer._checkpointer is None
        writer.close()
    finally:
        memory.close()
        rollback_journal.close()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=8),
    every=st.integers(min_value=1, max_value=5),
)
def test_every_committed_row_survives_background_checkpoints(tmp_path_factory, batches, every):
    """Concurrent batches (grouped by the writer thread) and inline commits, with checkpoints
    running meanwhile: after the writer closes, a fresh connection sees every committed row and
    an intact database."""
    path = tmp_path_factory.mktemp("ck") / "w.db"
    conn = _db(path)
    writer = Writer(conn, checkpoint_every=every)

    async def main() -> list[int]:
        ids: list[int] = []
        for size in batches:
            ids += await asyncio.gather(*(writer.run(_insert) for _ in range(size)))
            ids.append(await writer.run(_insert, inline=True))
        return ids

    try:
        ids = asyncio.run(main())
    finally:
        writer.close()
        conn.close()
    fresh = sqlite3.connect(path)
    try:
        assert fresh.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [r for (r,) in fresh.execute("SELECT id FROM t ORDER BY id")] == sorted(ids)
    finally:
        fresh.close()
    assert len(ids) == sum(batches) + len(batches)


def test_closing_the_writer_stops_the_checkpoint_thread(tmp_path):
    before = {t.ident for t in threading.enumerate() if t.name == "signer-checkpoint"}
    conn = _db(tmp_path / "w.db")
    writer = Writer(conn)
    mine = [t for t in threading.enumerate() if t.name == "signer-checkpoint" and t.ident not in before]
    assert len(mine) == 1 and mine[0].is_alive()
    writer.close()
    conn.close()
    assert not mine[0].is_alive()
    try:
        writer._checkpointer._conn.execute("SELECT 1")  # type: ignore[union-attr]
    except sqlite3.ProgrammingError:
        pass  # its connection is closed too
    else:
        raise AssertionError("the checkpoint connection is still open")


# ---- the real daemon ---------------------------------------------------------------------------


def test_a_daemon_under_background_checkpoints_keeps_every_record_and_an_intact_chain(anvil, tmp_path):
    """Enough requests through a real in-process daemon for several background checkpoints: every
    request is on record, the hash chain and its anchor verify, and after a restart a request's
    idempotency key still replays its stored outcome."""
    home = InProcessSigner(tmp_path, anvil.url)
    n = 3 * DEFAULT_EVERY + 5

    async def run() -> tuple[list[dict], int]:
        daemon = home.daemon()
        await daemon.start()
        try:
            async with SignerClient(home.paths.socket, home.admin_token) as admin:
                await admin.call(
                    "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                )
            async with SignerClient(home.paths.socket, home.token) as client:
                results = [
                    as_json(await client.sign(transfer(1000), idempotency_key=f"ckpt-{i:04d}"))
                    for i in range(n)
                ]
            checkpointer = daemon.writer._checkpointer
            assert checkpointer is not None
            _settle(checkpointer)
            return results, checkpointer.passes
        finally:
            await daemon.stop()

    async def replay() -> dict:
        daemon = home.daemon()
        await daemon.start()
        try:
            async with SignerClient(home.paths.socket, home.token) as client:
                return as_json(await client.sign(transfer(1000), idempotency_key="ckpt-0000"))
        finally:
            await daemon.stop()

    try:
        results, passes = asyncio.run(run())
        again = asyncio.run(replay())
    finally:
        shutil.rmtree(home.sockdir, ignore_errors=True)
    assert passes >= 3
    assert {r["status"] for r in results} <= {
        "signed",
        "pending_approval",
        "denied",
    }  # escalated past the limit
    assert results[0]["status"] == "signed"
    assert again["replayed"] is True and again["request_id"] == results[0]["request_id"]
    conn = connect(home.paths.db, readonly=True)
    try:
        report = audit_store.verify(conn, home.paths.anchor, keys=audit_keys(home.paths))
        stored = conn.execute("SELECT count(*) FROM requests WHERE idempotency_key GLOB 'ckpt-*'").fetchone()[
            0
        ]
        decided = conn.execute("SELECT count(*) FROM audit WHERE kind='sign.decided'").fetchone()[0]
    finally:
        conn.close()
    assert report.ok, report.problems
    assert stored == decided == n
