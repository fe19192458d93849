"""The `clients` table: every query signer.auth makes of it (who holds a token, its scope and life).

signer.auth decides (token format, constant-time comparison, expiry against the daemon's clock);
this module only reads and writes rows. The schema is signer.store.db's.
"""

from __future__ import annotations

import sqlite3

ClientRow = tuple[str, str, str, float, float | None, float | None]
"""client_id, name, scope, created_at, expires_at, revoked_at."""

_COLUMNS = "client_id, name, scope, created_at, expires_at, revoked_at"


def insert_client(
    conn: sqlite3.Connection,
    client_id: str,
    name: str,
    scope: str,
    token_hash: str,
    created_at: float,
    expires_at: float | None,
) -> bool:
    """Add a client; False if a client of that name exists (names are unique, revoked or not)."""
    try:
        conn.execute(
            "INSERT INTO clients(client_id, name, scope, token_hash, created_at, expires_at) VALUES(?,?,?,?,?,?)",
            (client_id, name, scope, token_hash, created_at, expires_at),
        )
    except sqlite3.IntegrityError:
        return False
    return True


def revoke_by_name(conn: sqlite3.Connection, name: str, now: float) -> bool:
    """Stamp the named client revoked; False if there is none, or it already was."""
    cur = conn.execute("UPDATE clients SET revoked_at=? WHERE name=? AND revoked_at IS NULL", (now, name))
    return cur.rowcount == 1


def all_clients(conn: sqlite3.Connection) -> list[ClientRow]:
    """Every client ever added, oldest first."""
    rows: list[ClientRow] = conn.execute(f"SELECT {_COLUMNS} FROM clients ORDER BY created_at").fetchall()
    return rows


def client_and_token_hash(conn: sqlite3.Connection, client_id: str) -> tuple[ClientRow, str] | None:
    """A client's row and the sha256 of its token's secret, if the id exists."""
    row: tuple[str, str, str, float, float | None, float | None, str] | None = conn.execute(
        f"SELECT {_COLUMNS}, token_hash FROM clients WHERE client_id=?", (client_id,)
    ).fetchone()
    if row is None:
        return None
    return row[:6], row[6]


def expiry_and_revocation(
    conn: sqlite3.Connection, client_id: str
) -> tuple[float | None, float | None] | None:
    """(expires_at, revoked_at) of a client: the only columns that change, read on every call."""
    row: tuple[float | None, float | None] | None = conn.execute(
        "SELECT expires_at, revoked_at FROM clients WHERE client_id=?", (client_id,)
    ).fetchone()
    return row
