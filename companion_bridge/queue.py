"""The bridge's durable delivery queue: approval requests held while no companion is connected.

Only a delivery queue: nothing here is trusted by the signer. It survives a bridge restart, so a
companion that reconnects gets the backlog; expired requests are dropped (the signer would refuse
an answer to them anyway).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from policies.kernel.files import open_private_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS queue(
    seq INTEGER PRIMARY KEY, request_id TEXT NOT NULL UNIQUE, request TEXT NOT NULL,
    expires_at REAL NOT NULL, answered INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class DeliveryQueue:
    def __init__(self, path: Path | str, clock=time.time) -> None:
        self.clock = clock
        # 0600 in a 0700 dir (so are -wal and -shm, which SQLite creates with the file's mode):
        # requests show recipients, amounts and the agent's reasons. The connection may be used
        # from the server's thread (tests run it in one).
        self._conn = open_private_db(Path(path), check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(SCHEMA)

    @property
    def cursor(self) -> int:
        """The signer's seq of the newest request held: the bridge resumes its long-poll from here."""
        row = self._conn.execute("SELECT MAX(seq) FROM queue").fetchone()
        return int(row[0] or 0)

    def put(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store requests from `approvals.wait`; returns the ones that were new."""
        fresh = []
        self._conn.execute("BEGIN")
        for item in items:
            request = item["request"]
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO queue(seq, request_id, request, expires_at) VALUES(?,?,?,?)",
                (item["seq"], request["request_id"], json.dumps(request), float(request["expires_at"])),
            )
            if cur.rowcount == 1:
                fresh.append(request)
        self._conn.execute("COMMIT")
        return fresh

    def backlog_json(self) -> list[str]:
        """Unanswered, unexpired requests as stored JSON text: sent on as is, never re-parsed."""
        rows = self._conn.execute(
            "SELECT request FROM queue WHERE answered=0 AND expires_at>? ORDER BY seq", (self.clock(),)
        ).fetchall()
        return [r[0] for r in rows]

    def mark_answered(self, request_id: str) -> None:
        self._conn.execute("UPDATE queue SET answered=1 WHERE request_id=?", (request_id,))

    def prune(self) -> int:
        """Forget what expired or was answered; the cursor keeps the newest row."""
        keep = self.cursor
        cur = self._conn.execute(
            "DELETE FROM queue WHERE (answered=1 OR expires_at<=?) AND seq<?", (self.clock(), keep)
        )
        return cur.rowcount

    def count(self) -> int:
        return int(
            self._conn.execute(
                "SELECT COUNT(*) FROM queue WHERE answered=0 AND expires_at>?", (self.clock(),)
            ).fetchone()[0]
        )

    def close(self) -> None:
        self._conn.close()
