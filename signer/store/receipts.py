"""The queries signer.receipts makes of the `requests` and `spends` tables: which transactions are
still in flight, and settling one as mined or dropped.

Statuses are signer.records' (`in_flight` is passed in, so the store holds no copy of them); what a
fate means for the spend ledger is signer.receipts' release rule, the store only writes it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

SentRow = tuple[str, str, int, str, object, object]
"""request_id, status, chain_id, tx_hash, sender and nonce (as the stored outcome holds them, unchecked)."""


def _marks(values: Sequence[str]) -> str:
    return ",".join("?" * len(values))


def sent_since_or_in_flight(
    conn: sqlite3.Connection, since: float, in_flight: Sequence[str]
) -> list[SentRow]:
    """Every signed transaction recorded after `since`, and every one broadcast and still in flight."""
    rows: list[SentRow] = conn.execute(
        "SELECT request_id, status, chain_id, tx_hash, json_extract(outcome, '$.sender'),"
        " json_extract(outcome, '$.nonce') FROM requests WHERE tx_hash IS NOT NULL AND (created_at > ?"
        f" OR (status IN ({_marks(in_flight)}) AND json_extract(outcome, '$.broadcast')=1))",
        (since, *in_flight),
    ).fetchall()
    return rows


def was_broadcast(conn: sqlite3.Connection, request_id: str) -> bool:
    """Did the request's transaction leave the signer? (With broadcasting off nothing ever does.)"""
    row: tuple[object] | None = conn.execute(
        "SELECT json_extract(outcome, '$.broadcast') FROM requests WHERE request_id=?", (request_id,)
    ).fetchone()
    return row is not None and row[0] == 1


def settle_mined(
    conn: sqlite3.Connection, request_id: str, status: str, seen: float, in_flight: Sequence[str]
) -> bool:
    """A receipt for the transaction itself: its new status, and its spends re-stamped at `seen` (it
    moved value at some moment up to then). False if it was no longer in flight: nothing written."""
    changed = conn.execute(
        f"UPDATE requests SET status=? WHERE request_id=? AND status IN ({_marks(in_flight)})",
        (status, request_id, *in_flight),
    ).rowcount
    if changed:
        conn.execute(
            "UPDATE spends SET ts=max(ts, ?) WHERE request_id=? AND state!='released'", (seen, request_id)
        )
    return bool(changed)


def settle_dropped(conn: sqlite3.Connection, request_id: str, status: str, in_flight: Sequence[str]) -> bool:
    """Proven never minable: its new status, and its spends released. False if it was no longer in
    flight (settled otherwise meanwhile): nothing written, nothing to release."""
    changed = conn.execute(
        f"UPDATE requests SET status=? WHERE request_id=? AND status IN ({_marks(in_flight)})",
        (status, request_id, *in_flight),
    ).rowcount
    if changed:
        conn.execute("UPDATE spends SET state='released' WHERE request_id=?", (request_id,))
    return bool(changed)
