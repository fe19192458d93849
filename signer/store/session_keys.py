"""The `session_keys` table: every query signer.tier2.session_keys and signer.admin make of it.

A row holds a key's public facts and its secret sealed under the master key (signer.keystore); only
signer.tier2.session_keys seals and opens it. The schema is signer.store.db's.
"""

from __future__ import annotations

import sqlite3

SessionKeyRow = tuple[str, int, str, float, float, str, str, bytes]
"""key_id, chain_id, address, created_at, expires_at, status, balance_cap (decimal text), sealed."""


def all_session_keys(conn: sqlite3.Connection) -> list[SessionKeyRow]:
    """Every session key ever made, whatever its status."""
    rows: list[SessionKeyRow] = conn.execute(
        "SELECT key_id, chain_id, address, created_at, expires_at, status, balance_cap, sealed FROM session_keys"
    ).fetchall()
    return rows


def insert_session_key(conn: sqlite3.Connection, row: SessionKeyRow) -> None:
    conn.execute(
        "INSERT INTO session_keys(key_id, chain_id, address, created_at, expires_at, status, balance_cap, sealed)"
        " VALUES(?,?,?,?,?,?,?,?)",
        row,
    )


def set_status(conn: sqlite3.Connection, key_id: str, status: str, now: float) -> None:
    """Retire or revoke a key: its status, and when it stopped signing."""
    conn.execute("UPDATE session_keys SET status=?, retired_at=? WHERE key_id=?", (status, now, key_id))


def ids_not_in_status(conn: sqlite3.Connection, status: str) -> list[str]:
    """The ids of every key whose status is not `status` (for example: every key not revoked yet)."""
    return [r[0] for r in conn.execute("SELECT key_id FROM session_keys WHERE status != ?", (status,))]
