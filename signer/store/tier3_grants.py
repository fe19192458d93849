"""The Tier 3 grants table, apart from signer.tier3.grants: the integrity triggers name it in every signer,
while the code that fills it (and its delegation parsing) loads only where a chain has Tier 3. Every
query signer.tier3.grants makes of it lives here; it verifies what it reads (signatures, caveats)."""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS tier3_grants(
    grant_id TEXT PRIMARY KEY, chain_id INTEGER NOT NULL, account TEXT NOT NULL, delegate TEXT NOT NULL,
    delegations TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL, ended_at REAL);
"""

GrantRow = tuple[str, int, str, str, float]
"""grant_id, chain_id, delegations (JSON text), status, created_at."""


def chains_with_grants(conn: sqlite3.Connection) -> set[int]:
    """Every chain that ever had a grant, live or ended."""
    return {r[0] for r in conn.execute("SELECT DISTINCT chain_id FROM tier3_grants")}


def grants_in_status(conn: sqlite3.Connection, status: str) -> list[GrantRow]:
    rows: list[GrantRow] = conn.execute(
        "SELECT grant_id, chain_id, delegations, status, created_at FROM tier3_grants WHERE status=?",
        (status,),
    ).fetchall()
    return rows


def insert_grant(
    conn: sqlite3.Connection,
    grant_id: str,
    chain_id: int,
    account: str,
    delegate: str,
    delegations_json: str,
    status: str,
    created_at: float,
) -> None:
    conn.execute(
        "INSERT INTO tier3_grants(grant_id, chain_id, account, delegate, delegations, status, created_at)"
        " VALUES(?,?,?,?,?,?,?)",
        (grant_id, chain_id, account, delegate, delegations_json, status, created_at),
    )


def end_grant(conn: sqlite3.Connection, grant_id: str, status: str, now: float) -> None:
    """A grant's last status (revoked), and when it ended."""
    conn.execute("UPDATE tier3_grants SET status=?, ended_at=? WHERE grant_id=?", (status, now, grant_id))
