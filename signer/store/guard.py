"""The signer store opened by a process that unlocked the keystore: rows sealed, audit keyed.

Every writer of signer.db goes through `open_unlocked` (the daemon, `owlia signer init`, the
admin CLI's client commands, `owlia signer integrity seal`): it registers the row-MAC functions
the triggers call (signer.store.integrity) and hands out the audit chain's keys. A connection
opened any other way can read the database but cannot write an authority-bearing row.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from signer.keystore import MasterKey
from signer.store.audit import AuditKeys
from signer.store.db import connect, ensure_schema
from signer.store.integrity import Finding, RowSealer


class IntegrityRefused(RuntimeError):
    """Authority-bearing state was changed by something without the master key; nothing was loaded."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        shown = "; ".join(str(f) for f in findings[:10]) + (f"; and {len(findings) - 10} more" if len(findings) > 10 else "")
        super().__init__(
            "signer.db was changed by something that does not hold the master key (an offline edit?): "
            f"{shown}. The signer did not start and nothing was loaded. Review with `owlia signer integrity "
            "check`, then restore signer.db from a backup or run `owlia signer integrity seal`, which removes "
            "the rows that fail (they grant nothing) and seals the rest.")


@dataclass(frozen=True)
class Unlocked:
    sealer: RowSealer
    audit_keys: AuditKeys

    @classmethod
    def from_master(cls, master: MasterKey) -> Unlocked:
        return cls(RowSealer(master), AuditKeys.derive(master))

    def connect(self, path: Path) -> sqlite3.Connection:
        """A writable connection with every table, trigger and MAC function in place."""
        conn = connect(path)
        ensure_schema(conn)
        self.sealer.install(conn)
        return conn


def last_integrity_event(conn: sqlite3.Connection) -> dict | None:
    """The latest start-up refusal or seal, as recorded in the audit log (read without the key: a
    report for `owlia signer status` and `owlia security audit`, which `owlia audit verify` authenticates)."""
    import json

    row = conn.execute("SELECT seq, ts, kind, body FROM audit WHERE kind IN ('integrity.refused', 'integrity.sealed')"
                       " ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        return None
    started = conn.execute("SELECT 1 FROM audit WHERE kind='signer.started' AND seq>?", (row[0],)).fetchone()
    return {"seq": row[0], "ts": row[1], "kind": row[2], "body": json.loads(row[3]),
            "signer_started_since": started is not None}
