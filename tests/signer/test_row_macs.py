"""Row MACs, property-tested: any change to any authority-bearing row, by anyone without the key, is seen."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings, strategies as st

from signer.keystore import MasterKey
from signer.store.db import SCHEMA as BASE_SCHEMA
from signer.store.integrity import DIGEST_ONLY, PROTECTED, Problem, RowSealer

ROW: dict[str, dict] = {  # one plausible row per table, every column set
    "meta": {"key": "policy_text", "value": "version: 1\nassets: []\n"},
    "clients": {
        "client_id": "0123456789ab",
        "name": "bot",
        "scope": "sign",
        "token_hash": "ab" * 32,
        "created_at": 1000.5,
        "expires_at": 2000.25,
        "revoked_at": None,
    },
    "session_keys": {
        "key_id": "sk_1",
        "chain_id": 31337,
        "address": "0x" + "12" * 20,
        "created_at": 1000.0,
        "expires_at": 9000.0,
        "status": "active",
        "balance_cap": "100000",
        "sealed": b"\x01\x02sealed",
        "retired_at": None,
    },
    "devices": {
        "device_id": "dev_1",
        "name": "phone",
        "public_key": "bb" * 32,
        "main_address": "0x" + "11" * 20,
        "capabilities": '["approve"]',
        "created_at": 1000.0,
        "last_seen": 1001.0,
        "revoked_at": None,
    },
    "pairings": {
        "pairing_id": "pair_1",
        "code_hash": "cc" * 32,
        "name": "phone",
        "created_at": 1000.0,
        "expires_at": 1600.0,
        "used_at": None,
        "device_id": None,
    },
    "used_proofs": {"digest": "dd" * 32, "ts": 1000.0},
    "approvals": {
        "seq": 1,
        "request_id": "req_1",
        "kind": "sign",
        "body": '{"tx": 1}',
        "request_hash": "ee" * 32,
        "expires_at": 2000.0,
        "state": "open",
        "answered_at": None,
        "device_id": None,
        "answer": None,
    },
    "policy_proposals": {"request_id": "req_2", "policy_hash": "ff" * 32, "text": "version: 1\n"},
    "requests": {
        "request_id": "req_1",
        "client_id": "0123456789ab",
        "idempotency_key": "k1",
        "kind": "sign",
        "request_hash": "ab" * 32,
        "created_at": 1000.0,
        "status": "signed",
        "outcome": "{}",
        "chain_id": 31337,
        "tx_hash": "0x" + "cd" * 32,
        "raw_tx": b"\x02raw",
        "expires_at": None,
    },
    "spends": {
        "id": 1,
        "request_id": "req_1",
        "chain_id": 31337,
        "asset": "native",
        "amount": "10000",
        "usd_micros": None,
        "ts": 1000.0,
        "state": "committed",
    },
    "recipients": {
        "chain_id": 31337,
        "address": "0x" + "33" * 20,
        "first_seen": 1000.0,
        "request_id": "req_1",
    },
    "tier3_grants": {
        "grant_id": "grant_1",
        "chain_id": 31337,
        "account": "0x" + "44" * 20,
        "delegate": "0x" + "55" * 20,
        "delegations": '[{"caveats": []}]',
        "status": "live",
        "created_at": 1000.0,
        "ended_at": None,
    },
}
COLUMNS = [(t, c) for t, row in ROW.items() for c in row]


def sealed_store(key: bytes = bytes(32)) -> tuple[sqlite3.Connection, RowSealer]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(BASE_SCHEMA)
    sealer = RowSealer(MasterKey(bytearray(key)))
    sealer.install(conn)
    sealer.seal(conn)
    for table, row in ROW.items():
        conn.execute(
            f"INSERT INTO {table}({', '.join(row)}) VALUES({', '.join('?' * len(row))})", tuple(row.values())
        )
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
    table, name = column
    conn, sealer = sealed_store()
    for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")  # the offline editor cannot call the MAC functions
    new = _changed(ROW[table][name], byte, index)
    conn.execute(f"UPDATE {table} SET {name}=?", (new,))
    findings = sealer.check(conn)
    assert any(f.table == table for f in findings), (table, name, new)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(PROTECTED)))
def test_a_row_deleted_with_its_mac_is_detected(table):
    conn, sealer = sealed_store()
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute(f"DELETE FROM {table}")
    conn.execute("DELETE FROM row_macs WHERE tbl=?", (table,))
    expected = Problem.CHANGED if table in DIGEST_ONLY else Problem.DELETED
    assert [(f.table, f.problem) for f in sealer.check(conn)] == [(table, expected)]


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(PROTECTED)), st.sampled_from(sorted(PROTECTED)))
def test_a_row_and_its_mac_moved_to_another_table_or_key_do_not_verify(source, target):
    _, sealer = sealed_store()
    pk, *values = [str(v) for v in ROW[source].values()]
    mac = sealer.row_mac(source, pk, *values)
    assert mac != sealer.row_mac(target, pk + "x", *values)  # another key
    if source != target:
        assert mac != sealer.row_mac(target, pk, *values)  # another table


def test_a_row_written_under_another_master_key_does_not_verify():
    conn, _ = sealed_store(bytes(32))
    other = RowSealer(MasterKey(bytearray(b"\x01" * 32)))
    failing = {f.table for f in other.check(conn) if f.problem in (Problem.EDITED, Problem.CHANGED)}
    assert failing == set(PROTECTED)


def test_encoding_keeps_types_apart():
    _, sealer = sealed_store()
    assert sealer.row_mac("t", "k", 1) != sealer.row_mac("t", "k", 1.0)
    assert sealer.row_mac("t", "k", "1") != sealer.row_mac("t", "k", 1)
    assert sealer.row_mac("t", "k", None) != sealer.row_mac("t", "k", "")
    assert sealer.row_mac("t", "k", "a", "bc") != sealer.row_mac("t", "k", "ab", "c")
    assert sealer.row_mac("t", "k", b"x") != sealer.row_mac("t", "k", "x")
