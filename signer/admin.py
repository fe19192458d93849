"""Local administration done directly on the signer's database, as the signer's user.

Client tokens are managed here rather than over RPC: whoever can open the signer home is already
the signer, and an RPC path would be one more thing a stolen token could try.

What this writes (the `clients` table and the audit log) is stamped with the signer's time as
estimated from the clock the daemon saved (`signer.clock.estimate`), not with this process's system
clock: so a token's expiry is measured on the clock the daemon judges it by, and a CLI run with the
system clock stepped far ahead neither stamps the far future nor lives that much longer. Nothing
written here feeds the daemon's clock (`signer.clock.latest_recorded` reads only what the daemon
writes), so the CLI cannot move it either way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

from signer.auth import Client, add_client, revoke_client
from signer.clock import estimate
from signer.wire.settings import SignerPaths
from signer.wire.protocol import Scope
from signer.store.audit import AuditLog
from signer.store.db import connect, ensure_schema

T = TypeVar("T")


def _audited(paths: SignerPaths, kind: str, body: dict, action: Callable[[sqlite3.Connection, float], T]) -> T:
    """Run a change and its audit record in one transaction, then move the anchor.

    `action` gets the connection and the signer's estimated time, read inside the transaction."""
    if not paths.db.exists():
        raise FileNotFoundError(f"no signer database at {paths.db}: run `owlia signer init` first")
    conn = connect(paths.db)
    try:
        ensure_schema(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            now = estimate(conn)
            audit = AuditLog(conn, paths.anchor, clock=lambda: now)
            result = action(conn, now)
            audit.append(kind, body)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        audit.write_anchor()
        audit.close()
        return result
    finally:
        conn.close()


def issue_client(paths: SignerPaths, name: str, scope: Scope, ttl_seconds: int | None = None) -> tuple[Client, str]:
    return _audited(paths, "client.added", {"name": name, "scope": scope.value, "ttl_seconds": ttl_seconds},
                    lambda conn, now: add_client(conn, name, scope, ttl_seconds=ttl_seconds, now=now))


def revoke(paths: SignerPaths, name: str) -> bool:
    return _audited(paths, "client.revoked", {"name": name}, lambda conn, now: revoke_client(conn, name, now=now))
