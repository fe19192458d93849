"""Local administration done directly on the signer's database, as the signer's user.

Client tokens are managed here rather than over RPC: whoever can open the signer home is already
the signer, and an RPC path would be one more thing a stolen token could try.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from signer.auth import Client, add_client, revoke_client
from signer.daemon import SignerPaths
from signer.protocol import Scope
from signer.store.audit import AuditLog
from signer.store.db import connect, ensure_schema

T = TypeVar("T")


def _audited(paths: SignerPaths, kind: str, body: dict, action: Callable) -> T:
    """Run a change and its audit record in one transaction, then move the anchor."""
    if not paths.db.exists():
        raise FileNotFoundError(f"no signer database at {paths.db}: run `owlia signer init` first")
    conn = connect(paths.db)
    try:
        ensure_schema(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            audit = AuditLog(conn, paths.anchor)
            result = action(conn)
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
                    lambda conn: add_client(conn, name, scope, ttl_seconds=ttl_seconds))


def revoke(paths: SignerPaths, name: str) -> bool:
    return _audited(paths, "client.revoked", {"name": name}, lambda conn: revoke_client(conn, name))
