"""The signer store opened by a process that unlocked the keystore: rows sealed, audit keyed.

Every writer of signer.db goes through `open_unlocked` (the daemon, `owlia signer init`, the
admin CLI's client commands, `owlia signer integrity seal`): it registers the row-MAC functions
the triggers call (signer.store.integrity) and hands out the audit chain's keys. A connection
opened any other way can read the database but cannot write an authority-bearing row.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from signer.keystore import MasterKey
from signer.store import state_head
from signer.store.audit import AuditKeys, AuditLog, load_anchor
from signer.store.db import connect, ensure_schema
from signer.store.integrity import Finding, Problem, RowSealer
from signer.store.state_head import StateBinder


class IntegrityRefused(RuntimeError):
    """Authority-bearing state was changed by something without the master key; nothing was loaded."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        shown = "; ".join(str(f) for f in findings[:10]) + (
            f"; and {len(findings) - 10} more" if len(findings) > 10 else ""
        )
        if went_back(findings):
            super().__init__(
                "signer.db (or its audit log) went back to an earlier state without the master key (a copy "
                f"put back offline?): {shown}. The signer did not start and nothing was loaded: an earlier "
                "state can bring back a revoked client or session key, lift a freeze, or give room under a "
                "spending limit. Restore the latest backup of signer.db together with audit.anchor, or see "
                "`owlia signer integrity check` and `owlia signer integrity seal --accept-rollback`."
            )
            return
        super().__init__(
            "signer.db was changed by something that does not hold the master key (an offline edit?): "
            f"{shown}. The signer did not start and nothing was loaded. Review with `owlia signer integrity "
            "check`, then restore signer.db from a backup or run `owlia signer integrity seal`, which removes "
            "the rows that fail (they grant nothing) and seals the rest."
        )


@dataclass(frozen=True)
class Unlocked:
    sealer: RowSealer
    audit_keys: AuditKeys
    binder: StateBinder

    @classmethod
    def from_master(cls, master: MasterKey) -> Unlocked:
        return cls(RowSealer(master), AuditKeys.derive(master), StateBinder.from_master(master))

    def connect(self, path: Path) -> sqlite3.Connection:
        """A writable connection with every table, trigger and MAC function in place."""
        conn = connect(path)
        ensure_schema(conn)
        conn.executescript(state_head.SCHEMA)
        self.sealer.install(conn)
        return conn

    def audit_log(
        self, conn: sqlite3.Connection, anchor: Path, clock: Callable[[], float] = time.time
    ) -> AuditLog:
        """The audit log of a home, which binds the state head before each commit (`bind_state`)."""
        return AuditLog(conn, anchor, clock, keys=self.audit_keys, bind=self.binder.bind)

    def check(self, conn: sqlite3.Connection, anchor: Path) -> list[Finding]:
        """Everything the daemon refuses to start over: rows changed without the key
        (signer.store.integrity), and the state or the log gone back (signer.store.state_head)."""
        findings = self.sealer.check(conn)
        failing = frozenset(f.table for f in findings)
        return findings + self.binder.check(
            conn, load_anchor(anchor, self.audit_keys), self.audit_keys, already_failing=failing
        )


def went_back(findings: list[Finding]) -> list[Finding]:
    """The findings that say the state, or the log, went back to an earlier copy of itself."""
    return [
        f
        for f in findings
        if f.problem is Problem.ROLLED_BACK
        or f.table == state_head.AUDIT
        or f.table == state_head.STATE
        and f.problem is not Problem.UNSEALED
    ]


class IntegrityBody(TypedDict, total=False):
    """A refused start's findings (signer.daemon), or what a seal removed (signer.admin)."""

    findings: list[str]
    count: int
    removed: list[str]
    sealed_rows: int
    accepted_policy_hash: str | None
    rollback_accepted: object


class IntegrityEvent(TypedDict):
    seq: int
    ts: float
    kind: str  # integrity.refused or integrity.sealed
    body: IntegrityBody
    signer_started_since: bool


def last_integrity_event(conn: sqlite3.Connection) -> IntegrityEvent | None:
    """The latest start-up refusal or seal, as recorded in the audit log (read without the key: a
    report for `owlia signer status` and `owlia security audit`, which `owlia audit verify` authenticates)."""
    row = conn.execute(
        "SELECT seq, ts, kind, body FROM audit WHERE kind IN ('integrity.refused', 'integrity.sealed')"
        " ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    started = conn.execute("SELECT 1 FROM audit WHERE kind='signer.started' AND seq>?", (row[0],)).fetchone()
    return {
        "seq": row[0],
        "ts": row[1],
        "kind": row[2],
        "body": json.loads(row[3]),
        "signer_started_since": started is not None,
    }
