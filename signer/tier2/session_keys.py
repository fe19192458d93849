"""Tier 2 session keys: generated here, sealed at rest, never exported, short-lived and capped.

A session key is disposable by design: it holds at most its balance cap, expires, can be rotated
or revoked at once, and its secret never leaves this module except into a coincurve signing key.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import coincurve

from policies.kernel.passphrase import zeroize
from signer.keystore import MasterKey
from signer.store import session_keys as key_store
from signer.store.db import Connection
from signer.wire.protocol import KeyStatus
from signer.wire.txcodec import SECP256K1_N, address_of

ACTIVE, RETIRED, REVOKED = KeyStatus.ACTIVE, KeyStatus.RETIRED, KeyStatus.REVOKED


@dataclass(frozen=True, slots=True)
class SessionKeyInfo:
    """Everything about a session key that may be shown to anyone: no secret material."""

    key_id: str
    chain_id: int
    address: str
    created_at: float
    expires_at: float
    status: KeyStatus
    balance_cap: int

    def to_json(self) -> dict[str, str | int | float]:
        return {
            "key_id": self.key_id,
            "chain_id": self.chain_id,
            "address": self.address,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "status": self.status,
            "balance_cap": str(self.balance_cap),
        }


@dataclass(slots=True)
class _Loaded:
    info: SessionKeyInfo
    signing_key: coincurve.PrivateKey = field(repr=False)


def _aad(key_id: str) -> bytes:
    return b"owliabot-session-key:" + key_id.encode()


def _generate_secret() -> bytearray:
    while True:
        secret = bytearray(secrets.token_bytes(32))
        if 0 < int.from_bytes(secret, "big") < SECP256K1_N:
            return secret
        zeroize(secret)


class SessionKeys:
    """Active keys decrypted in memory; writes go through the caller's transaction (group commit).

    `clock` stamps creation, expiry and retirement: the daemon passes its own (signer.clock), so that
    a key's lifetime is measured on the same clock the policy judges its expiry by."""

    def __init__(self, master: MasterKey, clock: Callable[[], float] = time.time) -> None:
        self._master = master
        self._clock = clock
        self._loaded: dict[str, _Loaded] = {}
        self._infos: dict[str, SessionKeyInfo] = {}
        # chain id -> `current(chain)`, read twice per sign request: kept up to date by every change
        # to `_loaded` (`_reindex`), so a revoked key is gone from it in the same synchronous step.
        self._current: dict[int, SessionKeyInfo] = {}

    # ---- loading ----------------------------------------------------------------------------

    def load(self, conn: Connection) -> None:
        for key_id, chain_id, address, created, expires, status, cap, sealed in key_store.all_session_keys(
            conn
        ):
            info = SessionKeyInfo(key_id, chain_id, address, created, expires, KeyStatus(status), int(cap))
            self._infos[key_id] = info
            if info.status is ACTIVE:
                self._unseal(info, sealed)

    def _unseal(self, info: SessionKeyInfo, sealed: bytes) -> None:
        secret = self._master.open(sealed, aad=_aad(info.key_id))
        try:
            key = coincurve.PrivateKey(bytes(secret))
        finally:
            zeroize(secret)
        if address_of(key) != info.address:
            raise RuntimeError(f"session key {info.key_id} does not match its recorded address")
        self._loaded[info.key_id] = _Loaded(info, key)
        self._reindex()

    def _reindex(self) -> None:
        """Per chain, the newest loaded key (the first of equals in load order, as `max` picks it)."""
        current: dict[int, SessionKeyInfo] = {}
        for loaded in self._loaded.values():
            info = loaded.info
            newest = current.get(info.chain_id)
            if newest is None or info.created_at > newest.created_at:
                current[info.chain_id] = info
        self._current = current

    # ---- queries ----------------------------------------------------------------------------

    def infos(self) -> list[SessionKeyInfo]:
        return sorted(self._infos.values(), key=lambda i: i.created_at)

    def info(self, key_id: str) -> SessionKeyInfo | None:
        return self._infos.get(key_id)

    def current(self, chain_id: int) -> SessionKeyInfo | None:
        """The newest active key for a chain, expired or not: the policy decides what expiry means."""
        return self._current.get(chain_id)

    def signing_key(self, key_id: str) -> coincurve.PrivateKey:
        loaded = self._loaded.get(key_id)
        if loaded is None:
            raise KeyError(f"session key {key_id} is not active")
        return loaded.signing_key

    # ---- changes: prepared on the loop, written by the writer, installed after the commit ----

    def prepare(
        self, chain_id: int, ttl_seconds: int, balance_cap: int
    ) -> tuple[SessionKeyInfo, coincurve.PrivateKey, bytes]:
        now = self._clock()
        key_id = "sk_" + secrets.token_hex(8)
        secret = _generate_secret()
        try:
            key = coincurve.PrivateKey(bytes(secret))
            sealed = self._master.seal(secret, aad=_aad(key_id))
        finally:
            zeroize(secret)
        info = SessionKeyInfo(key_id, chain_id, address_of(key), now, now + ttl_seconds, ACTIVE, balance_cap)
        return info, key, sealed

    @staticmethod
    def insert(conn: Connection, info: SessionKeyInfo, sealed: bytes) -> None:
        key_store.insert_session_key(
            conn,
            (
                info.key_id,
                info.chain_id,
                info.address,
                info.created_at,
                info.expires_at,
                ACTIVE,
                str(info.balance_cap),
                sealed,
            ),
        )

    def install(self, info: SessionKeyInfo, key: coincurve.PrivateKey) -> None:
        self._infos[info.key_id] = info
        self._loaded[info.key_id] = _Loaded(info, key)
        self._reindex()

    def disarm(self, key_id: str, status: KeyStatus) -> SessionKeyInfo:
        """Take signing power away in memory first (the safe direction), then persist with `mark`."""
        info = self._infos.get(key_id)
        if info is None:
            raise KeyError(key_id)
        self._loaded.pop(key_id, None)
        self._reindex()
        updated = SessionKeyInfo(
            info.key_id,
            info.chain_id,
            info.address,
            info.created_at,
            info.expires_at,
            status,
            info.balance_cap,
        )
        self._infos[key_id] = updated
        return updated

    def active_ids(self) -> list[str]:
        return list(self._loaded)

    def mark(self, conn: Connection, key_id: str, status: KeyStatus) -> None:
        key_store.set_status(conn, key_id, status, self._clock())

    def close(self) -> None:
        """Drop every signing key. coincurve keeps its copy in C memory that Python cannot wipe."""
        self._loaded.clear()
        self._current = {}
