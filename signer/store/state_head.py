"""The state head: every authority table bound to the audit log's head, and an epoch the anchor holds.

Row MACs and table digests (signer.store.integrity) stop anyone without the master key from
editing, adding or deleting a row, but each table is only consistent with itself: its rows, their
MACs and its digest copied together from an older copy of signer.db pass every check. A revoked
client, a lifted freeze, revoked session keys or a spend ledger with room again would be back. So
every commit ends by writing one row that binds the digests of all protected tables to the audit
log's head and to an epoch that grows by one per commit, under a key only the unlocked signer has:

  mac = HMAC(K_state, "owliabot-state-v1" | epoch | audit seq | audit head | {table: digest, ...})

The anchor file, outside the database, carries the epoch beside the log's head
(signer.store.audit). At start, before anything is loaded, `check` asks:

- is the state row authentic (written by a holder of the master key)?
- does it name the log's head? A log that moved on without the state means the state row went back
  with the tables (or a writer did not bind: a bug, refused all the same);
- is each table's digest the one bound? Else that table went back alone;
- is the anchor authentic, within the log, and not ahead of the row's epoch? Else the log or the
  state went back, state row and all.

What only a copy held elsewhere can tell: the whole home, database and anchor file, put back
together to an earlier copy of itself. The companion's witness keeps the epoch with the log's head
and refuses either going back (signer.wire.witness).
"""

from __future__ import annotations

import hmac
import json
import sqlite3

from signer.keystore import MasterKey
from signer.store.audit import Anchor, AuditKeys
from signer.store.integrity import PROTECTED, Finding, Problem
from signer.store.keyed_hash import KeyedSha256

STATE_PURPOSE = b"owliabot state-head v1"
_DOMAIN = "owliabot-state-v1"
REFUSED = "integrity.refused"  # the record a refused start appends (signer.daemon)
STATE = "state"  # the name findings about the state row carry
AUDIT = "audit"  # ... and those about the log against its anchor

SCHEMA = """
CREATE TABLE IF NOT EXISTS state_head(
    id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL, audit_seq INTEGER NOT NULL,
    audit_hash TEXT NOT NULL, digests TEXT NOT NULL, mac TEXT NOT NULL);
"""


class StateBinder:
    """Writes the state row at each commit and checks it at start. Holds no reference to the master key."""

    def __init__(self, key: bytes) -> None:
        self._mac = KeyedSha256(key)

    @classmethod
    def from_master(cls, master: MasterKey) -> StateBinder:
        return cls(master.hkdf(STATE_PURPOSE))

    def _row_mac(self, epoch: int, seq: int, head: str, digests: str) -> str:
        return self._mac.digest(f"{_DOMAIN}\n{epoch}\n{seq}\n{head}\n{digests}".encode()).hex()

    def bind(
        self, conn: sqlite3.Connection, seq: int, head: str, floor: int = 0, last: int | None = None
    ) -> int:
        """Bind the tables as they are now to the log's head `(seq, head)`; in the caller's
        transaction, as its last write. Returns the new epoch: one above the last (`last`, when the
        caller knows nobody else committed since, saves reading it), and above `floor` (a seal
        passes the anchor's epoch, in case the row itself was lost)."""
        if last is None:
            row = conn.execute("SELECT epoch FROM state_head WHERE id=1").fetchone()
            last = row[0] if row else 0
        epoch = max(last, floor) + 1
        digests = _digests(conn)
        conn.execute(
            "INSERT INTO state_head(id, epoch, audit_seq, audit_hash, digests, mac) VALUES(1,?,?,?,?,?) "
            "ON CONFLICT(id) DO UPDATE SET epoch=excluded.epoch, audit_seq=excluded.audit_seq, "
            "audit_hash=excluded.audit_hash, digests=excluded.digests, mac=excluded.mac",
            (epoch, seq, head, digests, self._row_mac(epoch, seq, head, digests)),
        )
        return epoch

    def check(
        self,
        conn: sqlite3.Connection,
        anchor: Anchor | None,
        keys: AuditKeys,
        *,
        already_failing: frozenset[str] = frozenset(),
    ) -> list[Finding]:
        """Every way the state or the log can have gone back without the master key (see the module
        docstring). `already_failing`: tables the row check already reported, which a digest
        mismatch here would only repeat. `keys`: the log's, to authenticate the refusals a start
        appends without binding (they are the one thing the log may hold past the state)."""
        row = conn.execute(
            "SELECT epoch, audit_seq, audit_hash, digests, mac FROM state_head WHERE id=1"
        ).fetchone()
        if row is None:
            if anchor is not None and anchor.authentic and anchor.epoch:  # the home had one: taken away
                return [Finding(STATE, None, Problem.DELETED)]
            # A home from before the state head (its anchor has no epoch): sealed once by the operator,
            # as the upgrade to row MACs is (`owlia signer integrity seal`), never behind their back.
            return [Finding(STATE, None, Problem.UNSEALED)]
        log = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        log_seq, log_head = (log[0], log[1]) if log else (0, "")
        findings = _anchor_findings(conn, anchor, log_seq)
        epoch, seq, head, digests, mac = row
        if not hmac.compare_digest(self._row_mac(epoch, seq, head, digests), mac):
            return [*findings, Finding(STATE, None, Problem.EDITED)]
        if ((seq, head) != (log_seq, log_head) and not _only_refusals_since(conn, seq, head, keys)) or (
            anchor is not None and anchor.epoch > epoch
        ):
            findings.append(Finding(STATE, None, Problem.ROLLED_BACK))
        bound = json.loads(digests)
        current = json.loads(_digests(conn))
        findings.extend(
            Finding(table, None, Problem.ROLLED_BACK)
            for table in PROTECTED
            if table not in already_failing and bound.get(table) != current.get(table)
        )
        return findings


def _only_refusals_since(conn: sqlite3.Connection, seq: int, head: str, keys: AuditKeys) -> bool:
    """The log holds record `seq` as `head`, and every record after it is an authentic start-up
    refusal chained onto it: a start refused over this very state appends one and binds nothing."""
    row = conn.execute("SELECT hash FROM audit WHERE seq=?", (seq,)).fetchone()
    if seq and (row is None or not hmac.compare_digest(row[0], head)):
        return False
    expected, prev = seq + 1, head
    for rseq, ts, kind, body, prev_hash, digest in conn.execute(
        "SELECT seq, ts, kind, body, prev_hash, hash FROM audit WHERE seq>? ORDER BY seq", (seq,)
    ):
        if (
            rseq != expected
            or kind != REFUSED
            or prev_hash != prev
            or not hmac.compare_digest(keys.record_hash(rseq, ts, kind, body, prev_hash), digest)
        ):
            return False
        expected, prev = rseq + 1, digest
    return True


def epoch_of(conn: sqlite3.Connection) -> int:
    """The epoch on record (0 before the first bind); read without the key, for reports."""
    row = conn.execute("SELECT epoch FROM state_head WHERE id=1").fetchone()
    return row[0] if row else 0


def _digests(conn: sqlite3.Connection) -> str:
    """Every protected table's digest as one canonical JSON text (a table never sealed is absent)."""
    rows = conn.execute("SELECT tbl, acc FROM table_digests ORDER BY tbl").fetchall()
    return json.dumps(dict(rows), separators=(",", ":"))


def _anchor_findings(conn: sqlite3.Connection, anchor: Anchor | None, log_seq: int) -> list[Finding]:
    """The log against its anchor: the one check `owlia audit verify` makes that the start needs too,
    since a log cut short together with the state row would otherwise look whole."""
    if anchor is None:
        return [Finding(AUDIT, "audit.anchor", Problem.DELETED)] if log_seq else []
    if not anchor.authentic:
        return [Finding(AUDIT, "audit.anchor", Problem.EDITED)]
    if anchor.seq > log_seq:
        return [Finding(AUDIT, None, Problem.ROLLED_BACK)]
    if anchor.seq:
        row = conn.execute("SELECT hash FROM audit WHERE seq=?", (anchor.seq,)).fetchone()
        if row is None or not hmac.compare_digest(row[0], anchor.head):
            return [Finding(AUDIT, None, Problem.ROLLED_BACK)]
    return []
