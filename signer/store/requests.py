"""The `requests`, `spends` and `recipients` tables: every query the engine and Tier 1 make of them.

The signer's decision code (signer.engine, signer.tier1.approvals, signer.tier1.policy_live, signer.tier1.topup_room)
holds no SQL: it calls these, on the reader connection or inside a writer unit's transaction.
The schema is signer.store.db's; statuses are signer.records'.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from signer.store.db import Connection as Connection, IntegrityError as IntegrityError

Spend = tuple[int, str, int, int | None]
"""chain_id, asset, amount, usd_micros: one asset a transaction spends."""


# ---- one request ---------------------------------------------------------------------------------


def by_idempotency_key(
    conn: Connection, client_id: str, idempotency_key: str
) -> tuple[str, str | None, str] | None:
    """(request_hash, stored outcome or None if interrupted, request_id) of a client's key, if used."""
    row: tuple[str, str | None, str] | None = conn.execute(
        "SELECT request_hash, outcome, request_id FROM requests WHERE client_id=? AND idempotency_key=?",
        (client_id, idempotency_key),
    ).fetchone()
    return row


def insert_sign(conn: Connection, row: tuple[Any, ...]) -> None:
    """A `sign.request`: request_id, client_id, idempotency_key, kind, request_hash, created_at,
    status, outcome, chain_id, expires_at, tx_hash, raw_tx. IntegrityError on a reused key."""
    conn.execute(
        "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at,"
        " status, outcome, chain_id, expires_at, tx_hash, raw_tx) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
        row,
    )


def insert_pending(
    conn: Connection,
    request_id: str,
    requester: str,
    kind: str,
    request_hash: str,
    created_at: float,
    outcome: str,
    chain_id: int,
    expires_at: float,
    status: str,
) -> None:
    """A request no client's `sign.request` made (a top-up, a policy loosening), keyed by its own id."""
    conn.execute(
        "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at,"
        " status, outcome, chain_id, expires_at) VALUES(?,?,?,?,?,?,?,?,?,?)",
        (
            request_id,
            requester,
            request_id,
            kind,
            request_hash,
            created_at,
            status,
            outcome,
            chain_id,
            expires_at,
        ),
    )


def status_row(conn: Connection, request_id: str) -> tuple[str, str, str | None, float | None] | None:
    """(client_id, status, outcome, expires_at) of a request."""
    row: tuple[str, str, str | None, float | None] | None = conn.execute(
        "SELECT client_id, status, outcome, expires_at FROM requests WHERE request_id=?", (request_id,)
    ).fetchone()
    return row


def status_and_created(conn: Connection, request_id: str) -> tuple[str, float] | None:
    row: tuple[str, float] | None = conn.execute(
        "SELECT status, created_at FROM requests WHERE request_id=?", (request_id,)
    ).fetchone()
    return row


def outcome_of(conn: Connection, request_id: str) -> str:
    """The stored outcome (JSON text) of a request that has one."""
    outcome: str = conn.execute("SELECT outcome FROM requests WHERE request_id=?", (request_id,)).fetchone()[
        0
    ]
    return outcome


def set_outcome(conn: Connection, request_id: str, status: str, outcome: str) -> None:
    conn.execute("UPDATE requests SET status=?, outcome=? WHERE request_id=?", (status, outcome, request_id))


def mark_signed(conn: Connection, request_id: str, outcome: str, tx_hash: str, raw_tx: bytes) -> None:
    """A Tier 1 transaction the main key signed: the request now carries it."""
    conn.execute(
        "UPDATE requests SET status='signed', outcome=?, tx_hash=?, raw_tx=? WHERE request_id=?",
        (outcome, tx_hash, raw_tx, request_id),
    )


def set_outcome_if(conn: Connection, request_id: str, status: str, outcome: str, *, current: str) -> None:
    """`set_outcome`, only while the request's status is still `current`."""
    conn.execute(
        "UPDATE requests SET status=?, outcome=? WHERE request_id=? AND status=?",
        (status, outcome, request_id, current),
    )


def nonce_ceiling(conn: Connection, chain_id: int, address: str) -> int:
    """One past the highest nonce the signer ever signed from `address` on `chain_id` (0 if none)."""
    row = conn.execute(
        "SELECT max(json_extract(outcome, '$.nonce')) FROM requests WHERE chain_id=? AND tx_hash IS NOT NULL"
        " AND lower(json_extract(outcome, '$.sender'))=?",
        (chain_id, address.lower()),
    ).fetchone()
    return 0 if row is None or row[0] is None else int(row[0]) + 1


# ---- spends and recipients ---------------------------------------------------------------------


def insert_spends(conn: Connection, request_id: str, spends: Iterable[Spend], ts: float, state: str) -> None:
    conn.executemany(
        "INSERT INTO spends(request_id, chain_id, asset, amount, usd_micros, ts, state) VALUES(?,?,?,?,?,?,?)",
        [
            (
                request_id,
                chain_id,
                asset,
                str(amount),
                None if usd_micros is None else str(usd_micros),
                ts,
                state,
            )
            for chain_id, asset, amount, usd_micros in spends
        ],
    )


def insert_recipients(
    conn: Connection, request_id: str, chain_id: int, addresses: Iterable[str], ts: float
) -> None:
    """First sightings of recipients; one already seen keeps its first sighting."""
    conn.executemany(
        "INSERT OR IGNORE INTO recipients(chain_id, address, first_seen, request_id) VALUES(?,?,?,?)",
        [(chain_id, address, ts, request_id) for address in addresses],
    )


def held_amounts(conn: Connection, request_id: str) -> Iterator[tuple[str, str]]:
    """(asset, amount as text) of a request's spends that are not released."""
    return conn.execute(
        "SELECT asset, amount FROM spends WHERE request_id=? AND state!='released'", (request_id,)
    )


def spends_between(
    conn: Connection, since: float, until: float
) -> Iterator[tuple[str, int, str, str, str | None, float]]:
    """(request_id, chain_id, asset, amount, usd_micros, ts) of spends not released, stamped in (since, until]."""
    return conn.execute(
        "SELECT request_id, chain_id, asset, amount, usd_micros, ts FROM spends"
        " WHERE state!='released' AND ts>? AND ts<=?",
        (since, until),
    )


def counted_signs_between(conn: Connection, since: float, until: float) -> Iterator[tuple[str, float]]:
    """(request_id, created_at) of `sign` requests that count as a transaction in the rate windows."""
    return conn.execute(
        "SELECT request_id, created_at FROM requests WHERE kind='sign' AND status NOT IN"
        " ('denied','pending_approval','failed','dropped') AND created_at>? AND created_at<=?",
        (since, until),
    )


def in_flight_spends(conn: Connection) -> Iterator[tuple[str, int, str, str, str | None, float]]:
    """Spends, not released, of transactions broadcast and not yet proven mined or dead."""
    return conn.execute(
        "SELECT s.request_id, s.chain_id, s.asset, s.amount, s.usd_micros, s.ts FROM spends s"
        " JOIN requests r ON r.request_id=s.request_id WHERE s.state!='released'"
        " AND r.status IN ('signed','unconfirmed') AND r.tx_hash IS NOT NULL"
        " AND json_extract(r.outcome, '$.broadcast')=1"
    )


def recipients(conn: Connection) -> Iterator[tuple[int, str, float, str]]:
    """(chain_id, address, first_seen, request_id) of every recipient seen."""
    return conn.execute("SELECT chain_id, address, first_seen, request_id FROM recipients")


def latest_stamp(conn: Connection) -> float | None:
    """The latest request or spend time on record (None for a new home): tables only the daemon
    writes, stamped by its own clock (signer.clock)."""
    row: tuple[float | None] | None = conn.execute(
        "SELECT MAX(t) FROM (SELECT MAX(created_at) AS t FROM requests UNION ALL SELECT MAX(ts) FROM spends)"
    ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def insert_done(
    conn: Connection,
    request_id: str,
    client_id: str,
    idempotency_key: str,
    kind: str,
    request_hash: str,
    created_at: float,
    reply: str,
) -> None:
    """An admin change, done when it is recorded; its reply is stored so that a replay of the same
    idempotency key gets it again. IntegrityError on a reused key."""
    conn.execute(
        "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at, status,"
        " outcome) VALUES(?,?,?,?,?,?,'done',?)",
        (request_id, client_id, idempotency_key, kind, request_hash, created_at, reply),
    )
