"""Property: any part of the signer's state put back to an earlier copy of itself is seen, unless it is
the whole database put back with an anchor no newer than it (the anchor may always lag: a crash
between a commit and its anchor), which only the companion's witness can tell
(tests/signer/test_state_rollback.py).

The signer here is the real store: a home's connection with the row-MAC triggers, its keyed audit
log and the state head bound at every commit, as the daemon commits. The attacker has the files but
not the key: a plain sqlite3 connection (the MAC triggers dropped, since it cannot compute them)
copies chosen tables, with their row MACs and digests, the state row, the audit log and the anchor
file from any earlier copy into the current home.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from hypothesis import given, settings, strategies as st

from signer.keystore import MasterKey
from signer.store.audit import AuditKeys
from signer.store.guard import Unlocked, went_back
from signer.store.integrity import PROTECTED, RowSealer
from signer.store.state_head import StateBinder
from tests.signer.rollback import put_back
from tests.signer.test_row_macs import ROW

TABLES = sorted(PROTECTED)
MASTER = MasterKey(bytearray(b"k" * 32))
# Every write: (table, action, n). Commits with and without an audit record both occur, since a
# commit that appends nothing must still be bound (the saved clock, a device's last_seen).
WRITE = st.tuples(st.sampled_from(TABLES), st.sampled_from(["insert", "update", "delete"]), st.integers(0, 3))
COMMIT = st.tuples(st.lists(WRITE, min_size=1, max_size=3), st.booleans())


def _unlocked() -> Unlocked:
    return Unlocked(RowSealer(MASTER), AuditKeys.derive(MASTER), StateBinder.from_master(MASTER))


def _row(table: str, n: int) -> dict:
    """The table's sample row under key `n` (every key column varied, so rows never collide)."""
    row = dict(ROW[table])
    for column in PROTECTED[table][0].split(":"):
        value = row[column]
        row[column] = value + n if isinstance(value, int) else f"{value}-{n}"
    return row


def _write(conn: sqlite3.Connection, table: str, action: str, n: int) -> None:
    row = _row(table, n)
    key = PROTECTED[table][0].split(":")
    where = " AND ".join(f"{c}=?" for c in key)
    args = tuple(row[c] for c in key)
    if action == "insert":
        conn.execute(
            f"INSERT OR IGNORE INTO {table}({', '.join(row)}) VALUES({', '.join('?' * len(row))})",
            tuple(row.values()),
        )
    elif action == "update":
        column = PROTECTED[table][1][-1]
        conn.execute(f"UPDATE {table} SET {column}=? WHERE {where}", (f"changed-{n}", *args))
    else:
        conn.execute(f"DELETE FROM {table} WHERE {where}", args)


def _commit(home: Path, unlocked: Unlocked, writes: list, audited: bool) -> None:
    """One commit as the signer makes it: the writes, maybe a record, the state bound, then the anchor."""
    conn = unlocked.connect(home / "signer.db")
    audit = unlocked.audit_log(conn, home / "audit.anchor")
    conn.execute("BEGIN IMMEDIATE")
    for write in writes:
        _write(conn, *write)
    if audited:
        audit.append("test.write", {"writes": [list(w) for w in writes]})
    audit.bind_state()
    conn.execute("COMMIT")
    audit.write_anchor()
    audit.close()
    conn.close()


def _snapshot(home: Path, into: Path) -> Path:
    into.mkdir()
    shutil.copy(home / "signer.db", into / "signer.db")
    shutil.copy(home / "audit.anchor", into / "audit.anchor")
    return into


def _content(home: Path) -> tuple:
    """Everything in the database the start-up check reads, as plain values."""
    conn = sqlite3.connect(home / "signer.db")
    try:
        return tuple(
            tuple(sorted(map(repr, conn.execute(f"SELECT * FROM {t}"))))
            for t in [*TABLES, "row_macs", "table_digests", "state_head", "audit"]
        )
    finally:
        conn.close()


@settings(max_examples=150, deadline=None)
@given(
    history=st.lists(COMMIT, min_size=1, max_size=6),
    back=st.integers(0, 5),
    tables=st.lists(st.sampled_from(TABLES), min_size=0, max_size=4, unique=True),
    state_row=st.booleans(),
    log=st.booleans(),
    anchor=st.booleans(),
)
def test_any_part_of_the_state_put_back_is_seen(
    tmp_path_factory, history, back, tables, state_row, log, anchor
):
    root = tmp_path_factory.mktemp("rollback")
    home = root / "home"
    home.mkdir()
    unlocked = _unlocked()
    conn = unlocked.connect(home / "signer.db")
    audit = unlocked.audit_log(conn, home / "audit.anchor")
    conn.execute("BEGIN IMMEDIATE")  # as `owlia signer init` leaves a home: sealed, one record, bound
    unlocked.sealer.seal(conn)
    audit.append("signer.initialized", {})
    audit.bind_state()
    conn.execute("COMMIT")
    audit.write_anchor()
    audit.close()
    conn.close()
    copies = [_snapshot(home, root / "copy0")]
    for i, (writes, audited) in enumerate(history, start=1):
        _commit(home, unlocked, writes, audited)
        copies.append(_snapshot(home, root / f"copy{i}"))
    states = [_content(copy) for copy in copies]
    back = min(back, len(copies) - 1)

    put_back(home / "signer.db", copies[back] / "signer.db", tables, state_row=state_row, log=log)
    if anchor:
        shutil.copy(copies[back] / "audit.anchor", home / "audit.anchor")

    conn = unlocked.connect(home / "signer.db")
    try:
        findings = unlocked.check(conn, home / "audit.anchor")
    finally:
        conn.close()
    anchor_from = back if anchor else len(copies) - 1
    if any(state == _content(home) and anchor_from <= i for i, state in enumerate(states)):
        assert not findings, findings  # nothing changed, or the whole database put back with an older anchor
    else:
        assert findings, "a state the signer never had passed the start-up check"
        assert went_back(findings) or any(f.table in PROTECTED and f.pk is not None for f in findings)


def test_a_home_that_only_moved_forward_passes(tmp_path):
    """The converse, so the property above cannot pass by refusing everything."""
    home = tmp_path / "home"
    home.mkdir()
    unlocked = _unlocked()
    conn = unlocked.connect(home / "signer.db")
    audit = unlocked.audit_log(conn, home / "audit.anchor")
    conn.execute("BEGIN IMMEDIATE")
    unlocked.sealer.seal(conn)
    audit.bind_state()
    conn.execute("COMMIT")
    audit.write_anchor()
    audit.close()
    conn.close()
    for n, table in enumerate(TABLES):
        _commit(home, unlocked, [(table, "insert", n)], audited=n % 2 == 0)
    conn = unlocked.connect(home / "signer.db")
    try:
        assert unlocked.check(conn, home / "audit.anchor") == []
    finally:
        conn.close()


def test_a_rolled_back_transaction_does_not_leave_a_stale_head_for_the_next_bind(tmp_path):
    """The daemon's log rolls a transaction back after appending (a unit failed), the CLI commits beside
    it, then the daemon commits with no record: that bind must follow the CLI's head, not the one the
    rolled-back transaction had read, or the next start would refuse a state nobody rolled back."""
    home = tmp_path / "home"
    home.mkdir()
    unlocked = _unlocked()
    daemon_conn = unlocked.connect(home / "signer.db")
    daemon = unlocked.audit_log(daemon_conn, home / "audit.anchor")
    daemon_conn.execute("BEGIN IMMEDIATE")
    unlocked.sealer.seal(daemon_conn)
    daemon.bind_state()
    daemon_conn.execute("COMMIT")
    daemon.write_anchor()

    daemon_conn.execute("BEGIN IMMEDIATE")
    daemon.append("test.failed_unit", {})
    daemon_conn.execute("ROLLBACK")
    daemon.reload()  # what the writer's rollback hook does
    _commit(home, unlocked, [("clients", "insert", 1)], audited=True)  # the CLI, another connection
    daemon_conn.execute("BEGIN IMMEDIATE")
    _write(daemon_conn, "meta", "insert", 2)  # a commit without a record (the saved clock)
    daemon.bind_state()
    daemon_conn.execute("COMMIT")
    daemon.write_anchor()
    daemon.close()
    try:
        assert unlocked.check(daemon_conn, home / "audit.anchor") == []
    finally:
        daemon_conn.close()
