"""The offline attacker's edit, for the rollback tests: tables put back from an older copy of signer.db."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def put_back(
    db: Path, old_db: Path, tables: list[str] | tuple[str, ...], *, state_row: bool = False, log: bool = False
) -> None:
    """Each table's rows, row MACs and digest as the old copy has them (consistent with each other, as
    someone with the files and no passphrase can make them), and, if asked, the state row and the
    audit log too. A plain sqlite3 connection: the MAC triggers, which need the master key's
    functions, and the log's append-only triggers are dropped first."""
    conn = sqlite3.connect(db, isolation_level=None)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("ATTACH DATABASE ? AS old", (str(old_db),))
    for table in tables:
        conn.execute(f"DELETE FROM main.{table}")
        conn.execute(f"INSERT INTO main.{table} SELECT * FROM old.{table}")
        conn.execute("DELETE FROM main.row_macs WHERE tbl=?", (table,))
        conn.execute("INSERT INTO main.row_macs SELECT * FROM old.row_macs WHERE tbl=?", (table,))
        conn.execute("DELETE FROM main.table_digests WHERE tbl=?", (table,))
        conn.execute("INSERT INTO main.table_digests SELECT * FROM old.table_digests WHERE tbl=?", (table,))
    for wanted, table in ((state_row, "state_head"), (log, "audit")):
        if wanted:
            conn.execute(f"DELETE FROM main.{table}")
            conn.execute(f"INSERT INTO main.{table} SELECT * FROM old.{table}")
    conn.execute("DETACH DATABASE old")
    conn.close()
