"""The Tier 1 tables: `approvals` (what waits for the companion) and `policy_proposals`, and the
kill switch's state in `meta`. Every query signer.tier1.approvals, signer.tier1.kill_switch, signer.tier1.policy_live
and signer.tier1.topup_room make of them lives here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from signer.store.db import get_meta, set_meta
from signer.store.requests import Connection

SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
    body TEXT NOT NULL, request_hash TEXT NOT NULL, expires_at REAL NOT NULL, state TEXT NOT NULL,
    answered_at REAL, device_id TEXT, answer TEXT);
CREATE TABLE IF NOT EXISTS policy_proposals(request_id TEXT PRIMARY KEY, policy_hash TEXT NOT NULL, text TEXT NOT NULL);
"""
OPEN, APPROVED, DENIED = "open", "approved", "denied"


# ---- approvals -----------------------------------------------------------------------------------


def insert(conn: Connection, body: Mapping[str, object], request_hash: str) -> None:
    """An approval request, open until it is answered or expires."""
    conn.execute(
        "INSERT INTO approvals(request_id, kind, body, request_hash, expires_at, state) VALUES(?,?,?,?,?,?)",
        (body["request_id"], body["kind"], json.dumps(body), request_hash, body["expires_at"], OPEN),
    )


def open_for_client(conn: Connection, client_id: str, now: float, except_keys: Iterable[str]) -> int:
    """How many open, unexpired approvals a client's requests have, leaving out these idempotency keys."""
    keys = list(except_keys)
    count: int = conn.execute(
        "SELECT COUNT(*) FROM approvals a JOIN requests r ON r.request_id=a.request_id "
        "WHERE r.client_id=? AND a.state=? AND a.expires_at>? AND r.idempotency_key NOT IN "
        f"({','.join('?' * len(keys))})",
        (client_id, OPEN, now, *keys),
    ).fetchone()[0]
    return count


def open_after(conn: Connection, after: int, now: float, limit: int) -> list[tuple[int, str, str]]:
    """(seq, body, request_hash) of open, unexpired approvals past the cursor `after`, oldest first."""
    return conn.execute(
        "SELECT seq, body, request_hash FROM approvals WHERE seq>? AND state=? AND expires_at>? "
        "ORDER BY seq LIMIT ?",
        (after, OPEN, now, limit),
    ).fetchall()


def find(conn: Connection, request_id: str) -> tuple[str, str, str, float, str] | None:
    """(kind, body, request_hash, expires_at, state) of an approval."""
    row: tuple[str, str, str, float, str] | None = conn.execute(
        "SELECT kind, body, request_hash, expires_at, state FROM approvals WHERE request_id=?", (request_id,)
    ).fetchone()
    return row


def close(
    conn: Connection, request_id: str, state: str, now: float, device_id: str, answer: Mapping[str, object]
) -> bool:
    """Close an open approval that has not expired by `now`; False if it was not (any more) one."""
    cur = conn.execute(
        "UPDATE approvals SET state=?, answered_at=?, device_id=?, answer=? "
        "WHERE request_id=? AND state=? AND expires_at>?",
        (state, now, device_id, json.dumps(answer), request_id, OPEN, now),
    )
    return cur.rowcount == 1


def is_open(conn: Connection, request_id: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM approvals WHERE request_id=? AND state=?", (request_id, OPEN)).fetchone()
        is not None
    )


def topups(
    conn: Connection, now: float, in_flight: tuple[str, str], pending: str
) -> list[tuple[str, str, str | None, str | None, str]]:
    """(request_id, status, tx_hash, outcome, body) of top-ups whose request is in flight, or pending
    with an approval that has not expired."""
    return conn.execute(
        "SELECT r.request_id, r.status, r.tx_hash, r.outcome, a.body FROM approvals a"
        " JOIN requests r ON r.request_id=a.request_id WHERE a.kind='topup'"
        " AND (r.status IN (?,?) OR (r.status=? AND a.expires_at>?))",
        (*in_flight, pending, now),
    ).fetchall()


# ---- policy proposals ----------------------------------------------------------------------------


def insert_proposal(conn: Connection, request_id: str, policy_hash: str, text: str) -> None:
    conn.execute(
        "INSERT INTO policy_proposals(request_id, policy_hash, text) VALUES(?,?,?)",
        (request_id, policy_hash, text),
    )


def proposal(conn: Connection, request_id: str) -> tuple[str, str]:
    """(policy_hash, text) of the policy an approval proposes."""
    row: tuple[str, str] = conn.execute(
        "SELECT policy_hash, text FROM policy_proposals WHERE request_id=?", (request_id,)
    ).fetchone()
    return row


def open_proposals(conn: Connection, policy_hash: str, now: float) -> list[tuple[str, str]]:
    """(request_id, body) of open, unexpired approvals proposing this policy."""
    return conn.execute(
        "SELECT a.request_id, a.body FROM approvals a JOIN policy_proposals p ON a.request_id=p.request_id "
        "WHERE p.policy_hash=? AND a.state=? AND a.expires_at>?",
        (policy_hash, OPEN, now),
    ).fetchall()


# ---- the kill switch -----------------------------------------------------------------------------


def freeze_id(conn: Connection) -> str:
    """The current freeze's id, "" when not frozen."""
    return get_meta(conn, "freeze_id") or ""


def freeze(conn: Connection, freeze_id: str, revoked: Iterable[str], now: float, status: str) -> None:
    """Frozen, under a fresh id, with these session keys marked `status` (revoked), in one transaction."""
    set_meta(conn, "frozen", "1")
    set_meta(conn, "freeze_id", freeze_id)
    for key_id in revoked:
        conn.execute(
            "UPDATE session_keys SET status=?, retired_at=COALESCE(retired_at, ?) WHERE key_id=?",
            (status, now, key_id),
        )


def thaw(conn: Connection, freeze_id: str) -> bool:
    """Lift the freeze `freeze_id`; False (nothing written) if another freeze is current by now."""
    if get_meta(conn, "freeze_id") != freeze_id:
        return False
    set_meta(conn, "frozen", "0")
    set_meta(conn, "freeze_id", "")
    return True
