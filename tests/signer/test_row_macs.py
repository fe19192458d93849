"""Row MACs, property-tested: any change to any authority-bearing row, by anyone without the key, is seen."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from signer.keystore import MasterKey
from signer.store.db import SCHEMA as BASE_SCHEMA
from signer.store.integrity import PROTECTED, Problem, RowSealer

ROW = {  # one plausible row per table, every column set (pk first, then PROTECTED's order)
    "meta": ("policy_text", "version: 1\nassets: []\n"),
    "clients": ("0123456789ab", "bot", "sign", "ab" * 32, 1000.5, 2000.25, None),
    "session_keys": ("sk_1", 31337, "0x" + "12" * 20, 1000.0, 9000.0, "active", "100000", b"\x01\x02sealed", None),
    "devices": ("dev_1", "phone", "bb" * 32, "0x" + "11" * 20, '["approve"]', 1000.0, 1001.0, None),
    "pairings": ("pair_1", "cc" * 32, "phone", 1000.0, 1600.0, None, None),
    "used_proofs": ("dd" * 32, 1000.0),
    "approvals": ("req_1", 1, "sign", '{"tx": 1}', "ee" * 32, 2000.0, "open", None, None, None),
    "policy_proposals": ("req_2", "ff" * 32, "version: 1\n"),
}
COLUMNS = [(t, i) for t, (_, cols) in PROTECTED.items() for i in range(1 + len(cols))]


def sealed_store(key: bytes = bytes(32)) -> tuple[sqlite3.Connection, RowSealer]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(BASE_SCHEMA)
    sealer = RowSealer(MasterKey(bytearray(key)))
    sealer.install(conn)
    sealer.seal(conn)
    for table, values in ROW.items():
        pk, cols = PROTECTED[table]
        names = ", ".join((pk, *cols))
        conn.execute(f"INSERT INTO {table}({names}) VALUES({', '.join('?' * len(values))})", values)
    return conn, sealer


def _changed(value, byte: int, index: int):
    if value is None:
        return byte
    if isinstance(value, bool) or isinstance(value, int):
        return value + 1 + byte
    if isinstance(value, float):
        return value + (byte + 1) / 4
    raw = bytearray(value.encode() if isinstance(value, str) else value)
    i = index % len(raw)
    raw[i] = (raw[i] + 1 + byte % 255) % 256
    if isinstance(value, str):
        return raw.decode("latin-1")
    return bytes(raw)


def test_the_store_as_the_signer_wrote_it_checks_clean():
    conn, sealer = sealed_store()
    assert sealer.check(conn) == []
    conn.execute("UPDATE clients SET revoked_at=5.0")  # the signer's own change keeps its MAC current
    conn.execute("DELETE FROM used_proofs")
    assert sealer.check(conn) == []


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(COLUMNS), st.integers(0, 254), st.integers(0, 10_000))
def test_any_single_change_to_any_row_is_detected(column, byte, index):
    table, position = column
    conn, sealer = sealed_store()
    pk_col, cols = PROTECTED[table]
    names = (pk_col, *cols)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")  # the offline editor cannot call the MAC functions
    new = _changed(ROW[table][position], byte, index)
    conn.execute(f"UPDATE {table} SET {names[position]}=?", (new,))
    findings = sealer.check(conn)
    assert any(f.table == table for f in findings), (table, names[position], new)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(PROTECTED)))
def test_a_row_deleted_with_its_mac_is_detected(table):
    conn, sealer = sealed_store()
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute(f"DELETE FROM {table}")
    conn.execute("DELETE FROM row_macs WHERE tbl=?", (table,))
    assert [(f.table, f.problem) for f in sealer.check(conn)] == [(table, Problem.DELETED)]


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(PROTECTED)), st.sampled_from(sorted(PROTECTED)))
def test_a_row_and_its_mac_moved_to_another_table_or_key_do_not_verify(source, target):
    _, sealer = sealed_store()
    pk, *values = ROW[source]
    mac = sealer.row_mac(source, pk, *values)
    assert mac != sealer.row_mac(target, pk + "x", *values)  # another key
    if source != target:
        assert mac != sealer.row_mac(target, pk, *values)  # another table


def test_a_row_written_under_another_master_key_does_not_verify():
    conn, _ = sealed_store(bytes(32))
    other = RowSealer(MasterKey(bytearray(b"\x01" * 32)))
    edited = {f.table for f in other.check(conn) if f.problem is Problem.EDITED}
    assert edited == set(PROTECTED)


def test_encoding_keeps_types_apart():
    _, sealer = sealed_store()
    assert sealer.row_mac("t", "k", 1) != sealer.row_mac("t", "k", 1.0)
    assert sealer.row_mac("t", "k", "1") != sealer.row_mac("t", "k", 1)
    assert sealer.row_mac("t", "k", None) != sealer.row_mac("t", "k", "")
    assert sealer.row_mac("t", "k", "a", "bc") != sealer.row_mac("t", "k", "ab", "c")
    assert sealer.row_mac("t", "k", b"x") != sealer.row_mac("t", "k", "x")
