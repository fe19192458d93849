"""The signer's SQLite database: one file, WAL, fsync on every commit."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# What a writer unit is handed, and what the store raises: named here so that code above the store
# never imports sqlite3 itself (the `sql-in-store` import contract).
Connection = sqlite3.Connection
IntegrityError = sqlite3.IntegrityError
DatabaseError = sqlite3.Error

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clients(
    client_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, scope TEXT NOT NULL,
    token_hash TEXT NOT NULL, created_at REAL NOT NULL, expires_at REAL, revoked_at REAL);
CREATE TABLE IF NOT EXISTS session_keys(
    key_id TEXT PRIMARY KEY, chain_id INTEGER NOT NULL, address TEXT NOT NULL,
    created_at REAL NOT NULL, expires_at REAL NOT NULL, status TEXT NOT NULL,
    balance_cap TEXT NOT NULL, sealed BLOB NOT NULL, retired_at REAL);
CREATE TABLE IF NOT EXISTS requests(
    request_id TEXT PRIMARY KEY, client_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
    kind TEXT NOT NULL, request_hash TEXT NOT NULL, created_at REAL NOT NULL,
    status TEXT NOT NULL, outcome TEXT, chain_id INTEGER, tx_hash TEXT, raw_tx BLOB,
    expires_at REAL, UNIQUE(client_id, idempotency_key));
CREATE TABLE IF NOT EXISTS spends(
    id INTEGER PRIMARY KEY, request_id TEXT NOT NULL, chain_id INTEGER NOT NULL,
    asset TEXT NOT NULL, amount TEXT NOT NULL, usd_micros TEXT, ts REAL NOT NULL,
    state TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS spends_request ON spends(request_id);
CREATE TABLE IF NOT EXISTS recipients(
    chain_id INTEGER NOT NULL, address TEXT NOT NULL, first_seen REAL NOT NULL,
    request_id TEXT NOT NULL, PRIMARY KEY(chain_id, address));
"""


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open with the durability settings every signer connection must share."""
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def ensure_schema(conn: sqlite3.Connection) -> None:
    from signer.store import (  # lazy: 36 ms, 9884 KiB
        audit,  # a cycle: audit reads through this module's `connect`
    )

    conn.executescript(SCHEMA)
    audit.ensure_schema(conn)


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        (key, value),
    )


def delete_meta(conn: sqlite3.Connection, key: str) -> None:
    conn.execute("DELETE FROM meta WHERE key=?", (key,))


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction taken at once (`BEGIN IMMEDIATE`, so no other writer slips in between a
    read and the write it decides): committed when the block ends, rolled back if it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
