"""The `devices`, `pairings` and `used_proofs` tables: every query signer.tier1.devices makes of them.

signer.tier1.devices checks the proofs (pairing code, device signatures, freshness); this module only
reads and writes rows. A device is authority-bearing state: its row carries a MAC
(signer.store.integrity), which is why its schema lives here, beside the other tables the store seals.
"""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS devices(
    device_id TEXT PRIMARY KEY, name TEXT NOT NULL, public_key TEXT NOT NULL UNIQUE,
    main_address TEXT NOT NULL, capabilities TEXT NOT NULL, created_at REAL NOT NULL,
    last_seen REAL, revoked_at REAL);
CREATE TABLE IF NOT EXISTS pairings(
    pairing_id TEXT PRIMARY KEY, code_hash TEXT NOT NULL, name TEXT NOT NULL,
    created_at REAL NOT NULL, expires_at REAL NOT NULL, used_at REAL, device_id TEXT);
CREATE TABLE IF NOT EXISTS used_proofs(digest TEXT PRIMARY KEY, ts REAL NOT NULL);
"""

DeviceRow = tuple[str, str, str, str, str, float, float | None, float | None]
"""device_id, name, public_key, main_address, capabilities (a JSON list), created_at, last_seen, revoked_at."""

_COLUMNS = "device_id, name, public_key, main_address, capabilities, created_at, last_seen, revoked_at"


# ---- devices -------------------------------------------------------------------------------------


def device(conn: sqlite3.Connection, device_id: str) -> DeviceRow | None:
    row: DeviceRow | None = conn.execute(
        f"SELECT {_COLUMNS} FROM devices WHERE device_id=?", (device_id,)
    ).fetchone()
    return row


def all_devices(conn: sqlite3.Connection) -> list[DeviceRow]:
    """Every device ever paired, revoked or not, oldest first."""
    rows: list[DeviceRow] = conn.execute(f"SELECT {_COLUMNS} FROM devices ORDER BY created_at").fetchall()
    return rows


def insert_device(conn: sqlite3.Connection, row: DeviceRow) -> None:
    """IntegrityError if the device key is already paired (public keys are unique)."""
    conn.execute(f"INSERT INTO devices({_COLUMNS}) VALUES(?,?,?,?,?,?,?,?)", row)


def revoke_device(conn: sqlite3.Connection, device_id: str, now: float) -> bool:
    """Stamp a device revoked; False if there is none, or it already was."""
    cur = conn.execute(
        "UPDATE devices SET revoked_at=? WHERE device_id=? AND revoked_at IS NULL", (now, device_id)
    )
    return cur.rowcount == 1


def touch_device(conn: sqlite3.Connection, device_id: str, now: float) -> None:
    """When the device last proved itself (shown to the owner; decides nothing)."""
    conn.execute("UPDATE devices SET last_seen=? WHERE device_id=?", (now, device_id))


# ---- pairings ------------------------------------------------------------------------------------


def insert_pairing(
    conn: sqlite3.Connection, pairing_id: str, code_hash: str, name: str, created_at: float, expires_at: float
) -> None:
    conn.execute(
        "INSERT INTO pairings(pairing_id, code_hash, name, created_at, expires_at) VALUES(?,?,?,?,?)",
        (pairing_id, code_hash, name, created_at, expires_at),
    )


def pairing(conn: sqlite3.Connection, pairing_id: str) -> tuple[str, float, float | None] | None:
    """(code_hash, expires_at, used_at) of a pairing."""
    row: tuple[str, float, float | None] | None = conn.execute(
        "SELECT code_hash, expires_at, used_at FROM pairings WHERE pairing_id=?", (pairing_id,)
    ).fetchone()
    return row


def spend_pairing(
    conn: sqlite3.Connection, pairing_id: str, now: float, device_id: str | None = None
) -> bool:
    """Mark a pairing used (by `device_id`, or by nobody when its code is spent on wrong guesses);
    False if it was already used: a pairing code is single use."""
    cur = conn.execute(
        "UPDATE pairings SET used_at=?, device_id=? WHERE pairing_id=? AND used_at IS NULL",
        (now, device_id, pairing_id),
    )
    return cur.rowcount == 1


# ---- single-use proofs ---------------------------------------------------------------------------


def remember_proof(conn: sqlite3.Connection, digest: str, ts: float) -> None:
    """For good: no clock decides when a proof may be forgotten, since either may be set back.
    IntegrityError if this proof was used before (a replay)."""
    conn.execute("INSERT INTO used_proofs(digest, ts) VALUES(?,?)", (digest, ts))
