"""Authority-bearing rows are authenticated with keys only the unlocked signer holds.

Whoever can write the signer's files while it is stopped could otherwise grant themselves
authority: install a loosened policy in `meta`, un-revoke a client or a device, lift the kill
switch, forge an approval. So every row of the tables below carries a MAC, kept beside it in
`row_macs`:

  row MAC = HMAC(K_row, "owliabot-row-v1" | repr((table, primary key, every column)))

which binds the row's whole content to its identity: a row copied to another key or another
table does not verify. A MAC per row cannot see a row deleted together with its MAC, so each
table also keeps a set digest, the XOR of HMAC(K_set, same material) over its rows. Those values
are stored nowhere else, so nobody without K_set can take a row out of the digest or put one in.

Both keys are derived by HKDF from the master key (`MasterKey.hkdf`), which only a process that
unlocked the keystore with the passphrase has. SQLite triggers keep the MACs and the digests
current on every INSERT, UPDATE and DELETE by calling two functions that exist only on a
connection `RowSealer.install` prepared: any other writer (an `sqlite3` shell, a forgotten code
path) fails with "no such function" instead of writing an unauthenticated row.

What this does not see: a table put back to an earlier copy of itself (its rows, MACs and digest
consistent with each other). The state head binds every table's digest to the audit log's head at
each commit and catches that (signer.store.state_head); the companion's checkpoints catch the whole
home put back (signer.tier1.audit_witness).
"""

from __future__ import annotations

import hmac
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypedDict

from signer.keystore import MasterKey
from signer.store import approvals, devices, tier3_grants
from signer.store.keyed_hash import KeyedSha256

ROW_PURPOSE = b"owliabot row-mac v1"
SET_PURPOSE = b"owliabot row-set v1"
_DOMAIN = b"owliabot-row-v1"
_ZERO = "0" * 64

# table -> (identity, the other columns): every column, so no part of a row is unauthenticated. The
# identity is one column, or for a composite key its columns joined by ':' (as SQL, `pk_sql`).
PROTECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "meta": ("key", ("value",)),
    "clients": ("client_id", ("name", "scope", "token_hash", "created_at", "expires_at", "revoked_at")),
    "session_keys": (
        "key_id",
        ("chain_id", "address", "created_at", "expires_at", "status", "balance_cap", "sealed", "retired_at"),
    ),
    "devices": (
        "device_id",
        ("name", "public_key", "main_address", "capabilities", "created_at", "last_seen", "revoked_at"),
    ),
    "pairings": ("pairing_id", ("code_hash", "name", "created_at", "expires_at", "used_at", "device_id")),
    "used_proofs": ("digest", ("ts",)),
    "approvals": (
        "request_id",
        ("seq", "kind", "body", "request_hash", "expires_at", "state", "answered_at", "device_id", "answer"),
    ),
    "policy_proposals": ("request_id", ("policy_hash", "text")),
    # Tier 3: the grant the session key redeems; a row restored or edited offline must not be used
    "tier3_grants": (
        "grant_id",
        ("chain_id", "account", "delegate", "delegations", "status", "created_at", "ended_at"),
    ),
    # The spend ledger and the address book grant authority by what they lack: a spend or a request
    # deleted offline is room under a limit, a recipient added offline skips `recipient.new`.
    "requests": (
        "request_id",
        (
            "client_id",
            "idempotency_key",
            "kind",
            "request_hash",
            "created_at",
            "status",
            "outcome",
            "chain_id",
            "tx_hash",
            "raw_tx",
            "expires_at",
        ),
    ),
    "spends": ("id", ("request_id", "chain_id", "asset", "amount", "usd_micros", "ts", "state")),
    "recipients": ("chain_id:address", ("first_seen", "request_id")),
}
# Written on every Tier 2 request, so kept by the table digest alone (one HMAC per row written, none
# stored per row): any change is seen, but not which row; the way back is a backup, or the operator
# accepting the ledger as it is (`owlia signer integrity seal --accept-ledger`).
DIGEST_ONLY = frozenset({"requests", "spends"})


def pk_sql(table: str, row: str = "") -> str:
    """The identity as an SQL expression over `row` (NEW., OLD., or the table itself)."""
    prefix = f"{row}." if row else ""
    return " || ':' || ".join(f"{prefix}{c}" for c in PROTECTED[table][0].split(":"))


SCHEMA = """
CREATE TABLE IF NOT EXISTS row_macs(tbl TEXT NOT NULL, pk TEXT NOT NULL, mac TEXT NOT NULL, PRIMARY KEY(tbl, pk));
CREATE TABLE IF NOT EXISTS table_digests(tbl TEXT PRIMARY KEY, acc TEXT NOT NULL);
"""


class Problem(str, Enum):
    EDITED = "edited"  # the row's MAC does not match its content
    ADDED = "added"  # a row with no MAC: written by something without the key
    DELETED = "deleted"  # a MAC without its row, or the table's digest is short of rows
    UNSEALED = "unsealed"  # the table has never been sealed (a home from before row MACs)
    CHANGED = "changed"  # a digest-only table: some row was edited, added or deleted
    ROLLED_BACK = (
        "rolled_back"  # consistent in itself, but not the state bound to the log (signer.store.state_head)
    )


class FindingJson(TypedDict):
    table: str
    pk: str | None
    problem: str  # a Problem's value


@dataclass(frozen=True, slots=True)
class Finding:
    table: str
    pk: str | None
    problem: Problem

    def to_json(self) -> FindingJson:
        return {"table": self.table, "pk": self.pk, "problem": self.problem.value}

    def __str__(self) -> str:
        where = f"{self.table}[{self.pk}]" if self.pk is not None else self.table
        return f"{where}: {self.problem.value}"


def _material(table: str, pk: Any, values: Iterable[Any]) -> bytes:
    """`repr` of the typed tuple: unambiguous for the values SQLite hands back (None, int, float, str,
    bytes: 1, 1.0, '1' and b'1' all differ; strings are quoted and escaped, floats round-trip) and
    computed in C, which matters on the signing path (each request writes a few protected rows)."""
    return _DOMAIN + repr((table, pk, *values)).encode("utf-8", "surrogatepass")


class RowSealer:
    """The two keys and the SQL functions the triggers call. Holds no reference to the master key."""

    def __init__(self, master: MasterKey) -> None:
        self._row_key = KeyedSha256(master.hkdf(ROW_PURPOSE))  # HMAC-SHA256, keyed once and copied per MAC
        self._set_key = KeyedSha256(master.hkdf(SET_PURPOSE))

    def row_mac(self, table: str, pk: Any, *values: Any) -> str:
        return self._row_key.digest(_material(table, pk, values)).hex()

    def _set_term(self, table: str, pk: Any, values: Iterable[Any]) -> int:
        return int.from_bytes(self._set_key.digest(_material(table, pk, values)), "big")

    def fold(self, table: str, acc: str | None, pk: Any, *values: Any) -> str:
        """XOR one row's term into (or, being its own inverse, out of) the table's digest."""
        return f"{int(acc or _ZERO, 16) ^ self._set_term(table, pk, values):064x}"

    def install(self, conn: sqlite3.Connection) -> None:
        """Register the functions and create the tables and triggers (outside any transaction)."""
        conn.create_function("owlia_row_mac", -1, self.row_mac, deterministic=True)
        conn.create_function("owlia_fold", -1, self.fold, deterministic=True)

        conn.executescript(
            devices.SCHEMA
            + approvals.SCHEMA
            + tier3_grants.SCHEMA
            + SCHEMA
            + "".join(_triggers(t) for t in PROTECTED)
        )

    # ---- checking and sealing ---------------------------------------------------------------

    def check(self, conn: sqlite3.Connection) -> list[Finding]:
        """Every protected row against its MAC, every MAC against its row, every table against its digest."""
        findings: list[Finding] = []
        digests = dict(conn.execute("SELECT tbl, acc FROM table_digests").fetchall())
        for table, (_, cols) in PROTECTED.items():
            macs = dict(conn.execute("SELECT pk, mac FROM row_macs WHERE tbl=?", (table,)).fetchall())
            acc, before = 0, len(findings)
            rows = conn.execute(f"SELECT {pk_sql(table)}, {', '.join(cols)} FROM {table}").fetchall()
            if table not in digests:  # never sealed: every row would fail alike; one finding says it
                if rows or macs:
                    findings.append(Finding(table, None, Problem.UNSEALED))
                continue
            for pk, *values in rows:
                acc ^= self._set_term(table, pk, values)
                if table in DIGEST_ONLY:
                    continue
                stored = macs.pop(str(pk), None)
                if stored is None:
                    findings.append(Finding(table, str(pk), Problem.ADDED))
                elif not hmac.compare_digest(stored, self.row_mac(table, pk, *values)):
                    findings.append(Finding(table, str(pk), Problem.EDITED))
            findings.extend(Finding(table, pk, Problem.DELETED) for pk in macs)
            if len(findings) == before and not hmac.compare_digest(digests[table], f"{acc:064x}"):
                # rows gone together with their MACs, or any change at all to a digest-only table
                findings.append(
                    Finding(table, None, Problem.CHANGED if table in DIGEST_ONLY else Problem.DELETED)
                )
        return findings

    def seal(self, conn: sqlite3.Connection) -> int:
        """MAC every protected row as it is now and reset the digests; in the caller's transaction.

        Only for `owlia signer init` (empty tables) and `owlia signer integrity seal`, which the
        operator runs with the passphrase after reading what `check` reported. Returns rows sealed."""
        conn.execute("DELETE FROM row_macs")
        sealed = 0
        for table, (_, cols) in PROTECTED.items():
            acc = 0
            for pk, *values in conn.execute(
                f"SELECT {pk_sql(table)}, {', '.join(cols)} FROM {table}"
            ).fetchall():
                if table not in DIGEST_ONLY:
                    conn.execute(
                        "INSERT INTO row_macs(tbl, pk, mac) VALUES(?,?,?)",
                        (table, str(pk), self.row_mac(table, pk, *values)),
                    )
                acc ^= self._set_term(table, pk, values)
                sealed += 1
            conn.execute(
                "INSERT INTO table_digests(tbl, acc) VALUES(?,?) ON CONFLICT(tbl) DO UPDATE SET acc=excluded.acc",
                (table, f"{acc:064x}"),
            )
        return sealed


def _triggers(table: str) -> str:
    _, cols = PROTECTED[table]

    def cells(row: str) -> str:
        return ", ".join([pk_sql(table, row), *(f"{row}.{c}" for c in cols)])

    def fold(row: str) -> str:
        return f"UPDATE table_digests SET acc=owlia_fold('{table}', acc, {cells(row)}) WHERE tbl='{table}';"

    def put(row: str) -> str:
        return (
            f"INSERT INTO row_macs(tbl, pk, mac) VALUES('{table}', CAST({pk_sql(table, row)} AS TEXT), "
            f"owlia_row_mac('{table}', {cells(row)})) ON CONFLICT(tbl, pk) DO UPDATE SET mac=excluded.mac;"
        )

    drop = f"DELETE FROM row_macs WHERE tbl='{table}' AND pk=CAST({pk_sql(table, 'OLD')} AS TEXT);"
    if table in DIGEST_ONLY:  # one statement per write: the old row's term out, the new one's in
        return (
            f"CREATE TRIGGER IF NOT EXISTS {table}_mac_insert AFTER INSERT ON {table} BEGIN {fold('NEW')} END;\n"
            f"CREATE TRIGGER IF NOT EXISTS {table}_mac_update AFTER UPDATE ON {table} BEGIN UPDATE table_digests "
            f"SET acc=owlia_fold('{table}', owlia_fold('{table}', acc, {cells('OLD')}), {cells('NEW')}) "
            f"WHERE tbl='{table}'; END;\n"
            f"CREATE TRIGGER IF NOT EXISTS {table}_mac_delete AFTER DELETE ON {table} BEGIN {fold('OLD')} END;\n"
        )
    return (
        f"CREATE TRIGGER IF NOT EXISTS {table}_mac_insert AFTER INSERT ON {table} BEGIN {put('NEW')} "
        f"{fold('NEW')} END;\n"
        f"CREATE TRIGGER IF NOT EXISTS {table}_mac_update AFTER UPDATE ON {table} BEGIN {drop} {put('NEW')} "
        f"{fold('OLD')} {fold('NEW')} END;\n"
        f"CREATE TRIGGER IF NOT EXISTS {table}_mac_delete AFTER DELETE ON {table} BEGIN {drop} {fold('OLD')} END;\n"
    )


def sealed_row_count(conn: sqlite3.Connection) -> int:
    """How many rows carry a MAC."""
    count: int = conn.execute("SELECT count(*) FROM row_macs").fetchone()[0]
    return count


def delete_row(conn: sqlite3.Connection, table: str, pk: str) -> None:
    """Remove one row of a protected table by its primary key as text (a row that failed its MAC)."""
    if table not in PROTECTED:
        raise ValueError(f"{table} is not a table the signer seals")
    conn.execute(f"DELETE FROM {table} WHERE CAST({pk_sql(table)} AS TEXT)=?", (pk,))
