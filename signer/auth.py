"""Who may talk to the signer: peer uid (SO_PEERCRED) first, then a token the signer issued.

Tokens look like `owl_<client id>_<secret>`; only sha256(secret) is stored, compared in constant
time. The secret has 256 bits of entropy, so a fast hash is the right hash.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import socket
import struct
import time
from dataclasses import dataclass

from signer.store import clients as client_store
from signer.store.clients import ClientRow
from signer.store.db import Connection
from signer.wire.protocol import SCOPE_RANK, ErrorCode, RpcError, Scope

TOKEN_RE = re.compile(r"^owl_([0-9a-f]{12})_([A-Za-z0-9_\-]{43})$")
NAME_RE = re.compile(r"^[a-z][a-z0-9_\-]{0,31}$")
DAY = 86400
DEFAULT_TOKEN_TTL_DAYS = 90
MAX_TOKEN_TTL_DAYS = 365
"""A token lives at most a year; one that never expires must be asked for by name (`--no-expiry`)."""


@dataclass(frozen=True, slots=True)
class Client:
    client_id: str
    name: str
    scope: Scope
    created_at: float
    expires_at: float | None
    revoked_at: float | None

    def active(self, now: float) -> bool:
        return _active(self.expires_at, self.revoked_at, now)

    def allows(self, needed: Scope) -> bool:
        return SCOPE_RANK[self.scope] >= SCOPE_RANK[needed]

    @classmethod
    def from_row(cls, row: ClientRow) -> Client:
        client_id, name, scope, created_at, expires_at, revoked_at = row
        return cls(client_id, name, Scope(scope), created_at, expires_at, revoked_at)


def _active(expires_at: float | None, revoked_at: float | None, now: float) -> bool:
    return revoked_at is None and (expires_at is None or now < expires_at)


def peer_uid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def uid_allowed(uid: int, allowed: list[int]) -> bool:
    return uid == os.getuid() or uid in allowed


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def add_client(
    conn: Connection,
    name: str,
    scope: Scope,
    *,
    ttl_seconds: int | None = None,
    now: float | None = None,
) -> tuple[Client, str]:
    """Create a client and return it with its token. The token is shown once and never stored.

    `ttl_seconds=None` is a token that never expires: callers pass it only when asked by name.
    """
    if not NAME_RE.match(name):
        raise ValueError(
            "client name must be lowercase letters, digits, '-' or '_' (max 32), starting with a letter"
        )
    if ttl_seconds is not None and not (
        isinstance(ttl_seconds, int) and 0 < ttl_seconds <= MAX_TOKEN_TTL_DAYS * DAY
    ):
        raise ValueError(
            f"a token's lifetime must be more than 0 and at most {MAX_TOKEN_TTL_DAYS} days "
            f"(got {ttl_seconds!r} seconds)"
        )
    now = time.time() if now is None else now
    client_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    expires = None if ttl_seconds is None else now + ttl_seconds
    if not client_store.insert_client(conn, client_id, name, scope.value, _hash(secret), now, expires):
        raise ValueError(f"a client named {name!r} already exists; revoke it first")
    return Client(client_id, name, scope, now, expires, None), f"owl_{client_id}_{secret}"


def revoke_client(conn: Connection, name: str, *, now: float | None = None) -> bool:
    return client_store.revoke_by_name(conn, name, time.time() if now is None else now)


def list_clients(conn: Connection) -> list[Client]:
    return [Client.from_row(row) for row in client_store.all_clients(conn)]


class ClientRegistry:
    """Read side used by the daemon. Re-reads a client on every check so revocation bites at once.

    `now` is the daemon's clock (signer.clock): setting the system clock back revives no expired token."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def _load(self, client_id: str) -> tuple[Client, str] | None:
        found = client_store.client_and_token_hash(self._conn, client_id)
        if found is None:
            return None
        row, token_hash = found
        return Client.from_row(row), token_hash

    def authenticate(self, token: str, now: float) -> Client:
        failure = RpcError(ErrorCode.UNAUTHENTICATED, "invalid, expired or revoked token")
        match = TOKEN_RE.match(token)
        if not match:
            raise failure
        loaded = self._load(match.group(1))
        # Hash and compare even for an unknown id, so timing does not reveal which ids exist.
        expected = loaded[1] if loaded else "0" * 64
        if not hmac.compare_digest(_hash(match.group(2)), expected) or loaded is None:
            raise failure
        client = loaded[0]
        if not client.active(now):
            raise failure
        return client

    def still_active(self, client_id: str, now: float) -> bool:
        """Checked before every call: only the two columns that can change, on the hot path."""
        row = client_store.expiry_and_revocation(self._conn, client_id)
        return row is not None and _active(row[0], row[1], now)
