"""The store's query functions on a real SQLite file: single use holds, a name is taken once, a
write transaction is all or nothing, and a table name never reaches SQL unchecked."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from signer.store import clients, devices, receipts
from signer.store.db import (
    Connection,
    IntegrityError,
    connect,
    ensure_schema,
    get_meta,
    set_meta,
    write_transaction,
)
from signer.store.integrity import PROTECTED, delete_row


@pytest.fixture
def conn(tmp_path: Path) -> Connection:
    db = connect(tmp_path / "signer.db")
    ensure_schema(db)
    db.executescript(devices.SCHEMA)
    return db


def test_a_write_transaction_commits_all_or_nothing(conn: Connection) -> None:
    with write_transaction(conn):
        set_meta(conn, "a", "1")
        set_meta(conn, "b", "1")
    with pytest.raises(RuntimeError), write_transaction(conn):
        set_meta(conn, "a", "2")
        raise RuntimeError("the change fails half way")
    assert (get_meta(conn, "a"), get_meta(conn, "b")) == ("1", "1")
    assert not conn.in_transaction


def test_a_pairing_code_is_spent_once(conn: Connection) -> None:
    devices.insert_pairing(conn, "pair_1", "hash", "phone", 0.0, 60.0)
    assert devices.spend_pairing(conn, "pair_1", 1.0, "dev_1")
    assert not devices.spend_pairing(conn, "pair_1", 2.0, "dev_2")  # a second device cannot take it
    assert devices.pairing(conn, "pair_1") == ("hash", 60.0, 1.0)


def test_a_proof_is_remembered_for_good(conn: Connection) -> None:
    devices.remember_proof(conn, "digest", 1.0)
    with pytest.raises(IntegrityError):
        devices.remember_proof(conn, "digest", 2.0)


def test_a_revocation_is_stamped_once(conn: Connection) -> None:
    devices.insert_device(conn, ("dev_1", "phone", "ab" * 32, "0x" + "1" * 40, '["freeze"]', 0.0, None, None))
    assert devices.revoke_device(conn, "dev_1", 5.0)
    assert not devices.revoke_device(conn, "dev_1", 9.0)
    assert devices.device(conn, "dev_1") == (
        "dev_1",
        "phone",
        "ab" * 32,
        "0x" + "1" * 40,
        '["freeze"]',
        0.0,
        None,
        5.0,
    )


def test_a_client_name_is_taken_once(conn: Connection) -> None:
    assert clients.insert_client(conn, "c1", "bot", "sign", "h1", 0.0, None)
    assert not clients.insert_client(conn, "c2", "bot", "admin", "h2", 1.0, None)
    assert clients.revoke_by_name(conn, "bot", 3.0)
    assert not clients.revoke_by_name(conn, "bot", 4.0)
    assert clients.all_clients(conn) == [("c1", "bot", "sign", 0.0, None, 3.0)]


def test_a_settled_transaction_is_settled_once(conn: Connection) -> None:
    conn.execute(
        "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at, status,"
        " outcome, tx_hash) VALUES('r1', 'c', 'k', 'sign', 'h', 1.0, 'signed', '{\"broadcast\": 1}', '0xab')"
    )
    conn.execute(
        "INSERT INTO spends(request_id, chain_id, asset, amount, ts, state) VALUES('r1', 1, 'ETH', '5', 1.0, 'held')"
    )
    assert receipts.was_broadcast(conn, "r1")
    assert receipts.settle_dropped(conn, "r1", "dropped", ("signed", "unconfirmed"))
    assert not receipts.settle_mined(conn, "r1", "confirmed", 9.0, ("signed", "unconfirmed"))
    assert conn.execute("SELECT state, ts FROM spends").fetchall() == [("released", 1.0)]


@settings(max_examples=50, deadline=None)
@given(table=st.text(min_size=1, max_size=40).filter(lambda name: name not in PROTECTED))
def test_only_a_sealed_table_can_have_a_row_deleted(
    tmp_path_factory: pytest.TempPathFactory, table: str
) -> None:
    """The table name is interpolated into the statement, so only the store's own names pass."""
    db = connect(tmp_path_factory.mktemp("db") / "signer.db")
    ensure_schema(db)
    with pytest.raises(ValueError, match="not a table the signer seals"):
        delete_row(db, table, "x")
    db.close()
