"""The append-only, keyed, hash-chained audit log.

Each record's hash is an HMAC, under a key derived from the master key (`AuditKeys`), over its
sequence number, time, kind, body and the previous record's hash: editing, reordering, dropping or
inserting any record breaks the chain from that point on, and nobody without the master key can
compute a new chain over a rewritten log. SQLite triggers refuse UPDATE and DELETE outright; the
anchor file (the last committed seq and hash, with an HMAC under its own derived key) catches a
log cut short at the tail, which a chain alone cannot see. `verify` checks all of it, and so needs
the keys: `owlia audit verify` unlocks them with the passphrase.

A key holder (root on the signer's host while it runs) can still put the log and its anchor back
to an earlier state of their own. The companion catches that: it keeps the latest checkpoint the
signer signed and refuses to go back (signer.tier1.audit_witness).

Homes created before the keyed chain keep their older records as they are (plain SHA-256): `owlia
signer integrity seal` appends an `audit.keyed` record that names how many came before it, and
`verify` accepts unkeyed records only as exactly that prefix.

Records are written inside the caller's transaction (`append` never commits): a decision and its
audit record are durable together or not at all. The head is re-read inside that transaction, so
the daemon and a local admin command can both append without forking the chain. A body that looks like it holds a secret is
refused, so a bug cannot leak a key into the log.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from signer.store.checkpoint import database_file
from signer.store.db import connect
from signer.store.keyed_hash import KeyedSha256

GENESIS = "0" * 64
CHAIN_PURPOSE = b"owliabot audit-chain v1"
ANCHOR_PURPOSE = b"owliabot audit-anchor v1"
KEYED_KIND = "audit.keyed"  # marks where a home's log became keyed (see the module docstring)
ANCHOR_BYTES = 192  # every anchor is padded to this width, so a shorter one never leaves a stale tail

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit(
    seq INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL,
    prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""

_HEX64 = re.compile(r"^(0x)?[0-9a-fA-F]{64}$")
_TOKEN = re.compile(r"owl_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")
# 32-byte hex values that are public by nature: hashes, calldata, salts.
_PUBLIC_HEX_KEYS = ("hash", "data", "salt", "topic", "idempotency_key")
# Free text that came from outside (the agent's stated reason): secret-looking runs are redacted.
_FREE_TEXT_KEYS = frozenset({"agent_reason_unverified", "reason", "note"})
_HEX64_ANYWHERE = re.compile(r"(0x)?[0-9a-fA-F]{64}")
_HEX_RUN = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{64}")  # found exactly when `_HEX64_ANYWHERE` is, faster
_SHORTEST_SECRET = 4 + 12 + 1 + 20  # a client token; a 32-byte hex value is longer still
_HEX_SECRET = 64  # below this length only a token can be in a string, and every token holds `owl_`


def _cannot_hold_secret(value: str) -> bool:
    """True when `_scrub_text` would return `value` unchanged whatever its key: too short for a
    32-byte hex value and without the literal start of a token (both patterns need one or the
    other). Addresses (42 characters) take this path, not the regular expressions."""
    return len(value) < _SHORTEST_SECRET or (len(value) < _HEX_SECRET and "owl_" not in value)


class AuditSecretError(ValueError):
    """A record body contains something shaped like a private key or token; nothing was written."""


def ensure_schema(conn: sqlite3.Connection) -> None:
    conn.executescript(SCHEMA)


def _material(seq: int, ts: float, kind: str, body: str, prev_hash: str) -> bytes:
    return f"{seq}\n{ts!r}\n{kind}\n{body}\n{prev_hash}".encode()


def _legacy_hash(seq: int, ts: float, kind: str, body: str, prev_hash: str) -> str:
    """How records were chained before the key: only ever accepted as a sealed prefix."""
    return hashlib.sha256(_material(seq, ts, kind, body, prev_hash)).hexdigest()


@dataclass(frozen=True, slots=True)
class AuditKeys:
    """The chain's and the anchor's keys, each derived for its own purpose from the master key."""

    chain: bytes
    anchor: bytes
    # the same keys as prepared HMAC states: each record and anchor is MACed without rehashing them
    _chain_mac: KeyedSha256 = field(init=False, repr=False, compare=False)
    _anchor_mac: KeyedSha256 = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_chain_mac", KeyedSha256(self.chain))
        object.__setattr__(self, "_anchor_mac", KeyedSha256(self.anchor))

    @classmethod
    def derive(cls, master: Any) -> AuditKeys:
        return cls(master.hkdf(CHAIN_PURPOSE), master.hkdf(ANCHOR_PURPOSE))

    def record_hash(self, seq: int, ts: float, kind: str, body: str, prev_hash: str) -> str:
        """HMAC-SHA256 under `chain` (twice per signature)."""
        return self._chain_mac.digest(_material(seq, ts, kind, body, prev_hash)).hex()

    def anchor_mac(self, seq: int, head: str, epoch: int = 0) -> str:
        """Epoch 0 is the anchor of a log without a state head (signer.store.state_head): the material
        of anchors from before it, so they still verify."""
        tail = f"\n{epoch}" if epoch else ""
        return self._anchor_mac.digest(f"anchor\n{seq}\n{head}{tail}".encode()).hex()


# The state head's writer (signer.store.state_head.StateBinder.bind):
# (conn, seq, head, floor, the last epoch if known) -> the new epoch
StateBind = Callable[[sqlite3.Connection, int, str, int, "int | None"], int]

_LEAVES = (int, float, bool, type(None))  # nothing secret-shaped fits in these


def _scrub(value: Any, key: str = "") -> Any:
    """Redact free text, refuse secret-shaped values elsewhere. Returns the cleaned value.

    Copy on write: a container comes back as the same object when nothing in it changed, and
    leaves that cannot hold a secret are skipped without a call (this runs twice per signature).
    """
    if isinstance(value, str):
        return value if _cannot_hold_secret(value) else _scrub_text(value, key)
    if isinstance(value, dict):
        return _scrub_members(value, value.items(), None)
    if isinstance(value, (list, tuple)):
        return _scrub_members(value, enumerate(value), key)  # items keep the list's key
    return value


def _scrub_members(container: Any, members: Any, key: str | None) -> Any:
    """`members` are (slot, value) pairs of `container`, checked under `key`, or each under its own
    slot's name when `key` is None (a dict's). The writable copy is made on the first change.

    This loop runs for every member of every record: the common types are inlined, and a string
    `_cannot_hold_secret` passes is skipped without a call. A member's key is only worked out for a
    value that needs checking."""
    out = container
    clean: Any
    for slot, v in members:
        kind = type(v)
        if kind is str:
            if len(v) < _SHORTEST_SECRET or (len(v) < _HEX_SECRET and "owl_" not in v):
                continue  # `_cannot_hold_secret`
            clean = _scrub_text(v, str(slot) if key is None else key)
        elif kind is dict:
            clean = _scrub_members(v, v.items(), None)
        elif kind in _LEAVES:
            continue
        else:  # lists, tuples and subclasses: `_scrub` decides
            clean = _scrub(v, str(slot) if key is None else key)
        if clean is not v and clean != v:
            if out is container:
                out = dict(container) if isinstance(container, dict) else list(container)
            out[slot] = clean
    return out


def _scrub_text(value: str, key: str) -> str:
    if key in _FREE_TEXT_KEYS:
        # Each substitution only where it can match: `_HEX64_ANYWHERE` retries at every hex digit of
        # every shorter run (an address in a reason is 40 of them), `_HEX_RUN` looks once per run.
        if _HEX_RUN.search(value) is not None:
            value = _HEX64_ANYWHERE.sub("[redacted hex]", value)
        return _TOKEN.sub("[redacted token]", value) if "owl_" in value else value
    if "owl_" in value and _TOKEN.search(value):  # every token holds `owl_`
        raise AuditSecretError(f"audit field {key!r} holds a client token")
    # 64 decimal digits is an amount (uint256 runs to 78); a random key is all digits once in 10**13.
    # The key first: a public one (a hash) needs no regular expression.
    if not key.endswith(_PUBLIC_HEX_KEYS) and _HEX64.match(value) and not value.isdigit():
        raise AuditSecretError(f"audit field {key!r} holds a 32-byte secret-shaped value")
    return value


# One encoder for every record: `json.dumps` with options builds a new one per call (twice per signature).
# No circular check: `_scrub` walks every record first, and a cycle fails there (RecursionError).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False)


def canonical(body: Mapping[str, object]) -> str:
    """`json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, the text a record's MAC covers."""
    return _CANONICAL.encode(body)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A record's scrubbed, serialized body: everything but its place in the chain (and, if `ts` is
    None, its time: then the log stamps it with its own clock when it is written)."""

    kind: str
    ts: float | None
    text: str


def prepare(kind: str, body: Mapping[str, object], ts: float | None = None) -> Prepared:
    """Scrub and serialize off the write path (the costly part); raises `AuditSecretError`, writes nothing."""
    return Prepared(kind, None if ts is None else float(ts), canonical(_scrub(body)))


class AuditLog:
    """Appends to the chain through one connection (the signer's single writer).

    Records given no time are stamped with `clock` as they are written; the daemon passes its own
    (signer.clock), so the log's times never run backwards and match the ledger's."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        anchor_path: Path,
        clock: Callable[[], float] = time.time,
        *,
        keys: AuditKeys,
        bind: StateBind | None = None,
    ) -> None:
        """`bind`: the state head's writer (signer.store.state_head): `bind_state` calls it before each
        commit, and the anchor then carries its epoch. Without it the anchor's epoch stays 0."""
        self._conn = conn
        self._bind = bind
        self._epoch = 0  # the epoch the last `bind_state` wrote
        self._keys = keys
        self._db_path = database_file(conn)  # read here, on the thread that owns the connection
        self._clock = clock
        self._anchor_path = Path(anchor_path)
        self._anchor_fd: int | None = None
        self._anchor_lock = threading.Lock()  # the writer thread and the event loop both write it
        self._anchored = (
            -1,
            -1,
        )  # the (epoch, seq) the file holds, as this process wrote it: it never goes back
        self._closed = False
        self._due: tuple[int, str, int] | None = None  # the last head `write_anchor_soon` scheduled
        self.reload()
        self.committed: tuple[int, str] = self.head  # what the anchor holds: only committed records
        self.committed_epoch = 0  # and the state head's epoch at that commit

    def reload(self) -> None:
        """Re-read the head, e.g. after a rolled-back transaction discarded appended records."""
        self._version = self._data_version()
        # After another writer's commit or a rollback: the epoch on disk is read again at the next bind,
        # and so is `data_version` (`_checked`: `write` read it in the transaction under way).
        self._epoch_known = False
        self._checked = False
        row = self._conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        self._seq: int = row[0] if row else 0
        self._hash: str = row[1] if row else GENESIS

    def _data_version(self) -> int:
        """Changes whenever another connection (a local admin command) commits to the database."""
        version: int = self._conn.execute("PRAGMA data_version").fetchone()[0]
        return version

    @property
    def head(self) -> tuple[int, str]:
        return self._seq, self._hash

    def append(self, kind: str, body: Mapping[str, object], ts: float | None = None) -> int:
        """Add a record in the current transaction; the caller commits."""
        return self.write(prepare(kind, body, ts))

    def write(self, *records: Prepared) -> int:
        """Chain prepared records onto the head, in the current transaction; the caller commits.

        One statement for all of them: on the writer thread every statement is a trip through the GIL.
        Returns the last record's seq.
        """
        # Inside the caller's write transaction: if another writer (the CLI) appended since, follow it.
        if self._data_version() != self._version:
            self.reload()
        self._checked = True  # under the transaction's write lock, nobody else commits until it ends
        seq, head, rows = self._seq, self._hash, []
        for record in records:
            seq += 1
            ts = self._clock() if record.ts is None else record.ts
            digest = self._keys.record_hash(seq, ts, record.kind, record.text, head)
            rows.append((seq, ts, record.kind, record.text, head, digest))
            head = digest
        self._conn.executemany(
            "INSERT INTO audit(seq, ts, kind, body, prev_hash, hash) VALUES(?,?,?,?,?,?)", rows
        )
        self._seq, self._hash = seq, head
        return seq

    def bind_state(self, *, floor: int = 0) -> None:
        """Bind the state as it is now to the log's head: in the transaction, right before its COMMIT.
        Every writer of a signer home calls it; one that did not would be refused at the next start."""
        if self._bind is None:
            return
        if not self._checked and self._data_version() != self._version:  # another writer committed since
            self.reload()
        self._checked = False
        self._epoch = self._bind(
            self._conn, self._seq, self._hash, floor, self._epoch if self._epoch_known else None
        )
        self._epoch_known = (
            True  # unless this transaction rolls back: then `reload` (the writer's hook) forgets it
        )

    def write_anchor(self) -> None:
        """Record the committed head. Written after the commit, so it never runs ahead of the log.

        Overwritten in place with one fixed-width write: no truncate, no rename. Replacing the file
        by rename made ext4 flush it at once (its `auto_da_alloc` rule), 0.3-1 ms on every commit.
        One sub-sector write at offset 0 is all-or-nothing for a crash of the process, and the
        anchor is never fsync'd anyway: after a power cut it may only lag behind the log. The file
        stays open between commits (`close` releases it).
        """
        seq, head = self.committed = self._seq, self._hash
        self.committed_epoch = self._epoch
        self._write_anchor(seq, head, self._epoch)

    def write_anchor_soon(self) -> None:
        """`write_anchor` for a commit made on the event loop: the head is taken now, the file is
        written once the loop's current step ends, i.e. after the request that committed has sent
        its reply. Until then the anchor lags one commit behind the log, which it may always do
        (the same as a crash between the commit and the write); it never runs ahead of it."""
        seq, head = self.committed = self._seq, self._hash
        epoch = self.committed_epoch = self._epoch
        self._due = (seq, head, epoch)
        asyncio.get_running_loop().call_soon(self._write_anchor, seq, head, epoch)

    def _write_anchor(self, seq: int, head: str, epoch: int) -> None:
        with self._anchor_lock:
            if self._closed or (epoch, seq) <= self._anchored:  # a later head was written meanwhile
                return
            data = anchor_bytes(seq, head, self._keys.anchor_mac(seq, head, epoch), epoch)
            if self._anchor_fd is None:
                self._anchor_fd = os.open(
                    self._anchor_path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
                )
            os.pwrite(self._anchor_fd, data, 0)
            self._anchored = (epoch, seq)

    def verify_all(self) -> VerifyJson:
        """`verify` over the whole database this log writes to, on a fresh read-only connection (any thread)."""
        path = self._db_path
        if path is None:
            raise ValueError("the audit log is not in a database file")
        conn = connect(path, readonly=True)
        try:
            return verify(conn, self._anchor_path, keys=self._keys).to_json()
        finally:
            conn.close()

    def close(self) -> None:
        """Write the anchor of the last commit if a deferred write is still due, then release the file."""
        if self._due is not None:
            self._write_anchor(*self._due)  # nothing if a later head was written already
        with self._anchor_lock:
            self._closed = True
            if self._anchor_fd is not None:
                os.close(self._anchor_fd)
                self._anchor_fd = None


def anchor_bytes(seq: int, head: str, mac: str, epoch: int = 0) -> bytes:
    """The anchor file's content: the JSON `json.dumps` writes for {"seq", "hash", "mac"} (and
    "epoch", once the home has a state head), padded to `ANCHOR_BYTES`. Formatted directly, since
    it is written after every commit; the numbers are ints and the two hashes are hex, so nothing
    in it needs escaping."""
    tail = f', "epoch": {epoch:d}' if epoch else ""
    return (
        f'{{"seq": {seq:d}, "hash": "{head}", "mac": "{mac}"{tail}}}'.encode().ljust(ANCHOR_BYTES - 1) + b"\n"
    )


@dataclass(frozen=True, slots=True)
class Anchor:
    """The anchor file as read, its MAC checked (`load_anchor`)."""

    seq: int
    head: str
    epoch: int
    authentic: bool


def load_anchor(path: Path, keys: AuditKeys) -> Anchor | None:
    """The anchor file with its MAC checked; None when there is none. An unreadable one is not authentic."""
    parsed = read_anchor(path)
    if parsed is None:
        return None
    seq, head, mac, epoch = parsed
    return Anchor(seq, head, epoch, seq >= 0 and hmac.compare_digest(keys.anchor_mac(seq, head, epoch), mac))


class VerifyJson(TypedDict):
    ok: bool
    records: int
    head_hash: str
    problems: list[str]


@dataclass
class VerifyReport:
    ok: bool
    records: int
    head_hash: str
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> VerifyJson:
        return {
            "ok": self.ok,
            "records": self.records,
            "head_hash": self.head_hash,
            "problems": self.problems,
        }


def read_anchor(path: Path) -> tuple[int, str, str, int] | None:
    """(seq, head hash, mac, epoch); None if there is no file, seq -1 if it cannot be parsed."""
    try:
        data = json.loads(Path(path).read_text())
        return int(data["seq"]), str(data["hash"]), str(data.get("mac", "")), int(data.get("epoch", 0))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        return (-1, "", "", 0)


def verify(
    conn: sqlite3.Connection, anchor_path: Path | None = None, *, keys: AuditKeys, max_problems: int = 50
) -> VerifyReport:
    """Walk the whole chain; report every break (up to `max_problems`).

    The anchor is read before the walk starts its snapshot: it only ever lags the log, so a signer
    committing meanwhile can make the walk longer than the anchor, never shorter."""
    anchor = read_anchor(anchor_path) if anchor_path is not None else None
    problems: list[str] = []
    expected_seq, prev, count, legacy, keyed_seen, sealed = 1, GENESIS, 0, 0, False, None
    hashes: dict[int, str] = {}
    for seq, ts, kind, body, prev_hash, digest in conn.execute(
        "SELECT seq, ts, kind, body, prev_hash, hash FROM audit ORDER BY seq"
    ):
        count += 1
        if seq != expected_seq:
            problems.append(f"records {expected_seq}..{seq - 1} are missing (deleted)")
        if prev_hash != prev:
            problems.append(f"record {seq}: does not link to the record before it (reordered or replaced)")
        if hmac.compare_digest(keys.record_hash(seq, ts, kind, body, prev_hash), digest):
            keyed_seen = True
            if kind == KEYED_KIND and sealed is None:
                sealed = _legacy_count(body)
        elif not keyed_seen and _legacy_hash(seq, ts, kind, body, prev_hash) == digest:
            legacy += 1  # from before the keyed chain; accepted only as the prefix a seal names
        else:
            problems.append(f"record {seq}: its MAC does not match its content (edited or forged)")
        hashes[seq] = digest
        expected_seq, prev = seq + 1, digest
        if len(problems) >= max_problems:
            problems.append("too many problems; stopped")
            break
    if legacy != (sealed or 0):
        problems.append(
            f"records 1..{legacy} are not keyed, and no `{KEYED_KIND}` record seals exactly them "
            "(a home never sealed with `owlia signer integrity seal`, or a rewritten log)"
        )
    head = prev
    if anchor_path is not None:
        if anchor is None:
            if count:
                problems.append(f"anchor file {anchor_path} is missing")
        elif anchor[0] < 0:
            problems.append(f"anchor file {anchor_path} is unreadable")
        elif not hmac.compare_digest(keys.anchor_mac(anchor[0], anchor[1], anchor[3]), anchor[2]):
            problems.append(f"anchor file {anchor_path} is not authentic (rewritten)")
        elif anchor[0] > expected_seq - 1:
            problems.append(
                f"the log ends at record {expected_seq - 1} but the anchor says {anchor[0]} (truncated)"
            )
        elif anchor[0] and hashes.get(anchor[0]) != anchor[1]:
            problems.append(f"record {anchor[0]} does not match the anchor (rewritten)")
    return VerifyReport(ok=not problems, records=count, head_hash=head, problems=problems)


def _legacy_count(body: str) -> int:
    try:
        return int(json.loads(body)["legacy_records"])
    except (ValueError, KeyError, TypeError):
        return -1


class AuditEntryJson(TypedDict):
    seq: int
    ts: float
    kind: str
    body: object  # one shape per record kind, as written
    hash: str


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    ts: float
    kind: str
    body: dict[str, Any]  # the record's JSON as the log holds it, any kind
    hash: str

    def to_json(self) -> AuditEntryJson:
        return {"seq": self.seq, "ts": self.ts, "kind": self.kind, "body": self.body, "hash": self.hash}


def tail(
    conn: sqlite3.Connection, n: int = 20, *, kind: str | None = None, since_seq: int = 0
) -> list[AuditEntry]:
    """The last `n` records (optionally of one kind, or after `since_seq`), oldest first."""
    sql = "SELECT seq, ts, kind, body, hash FROM audit WHERE seq > ?"
    args: list[Any] = [since_seq]
    if kind:
        sql += " AND kind = ?"
        args.append(kind)
    sql += " ORDER BY seq DESC LIMIT ?"
    args.append(max(0, min(int(n), 10_000)))
    rows = conn.execute(sql, args).fetchall()
    return [AuditEntry(seq, ts, k, json.loads(body), h) for seq, ts, k, body, h in reversed(rows)]


def hash_at(conn: sqlite3.Connection, seq: int) -> str | None:
    """The hash of record `seq`, if the log has it."""
    row = conn.execute("SELECT hash FROM audit WHERE seq=?", (seq,)).fetchone()
    return None if row is None else row[0]


def records_of_kinds(conn: sqlite3.Connection, kinds: Iterable[str]) -> Iterator[tuple[int, str, str]]:
    """(seq, kind, body as stored) of every record of these kinds, in log order."""
    wanted = tuple(kinds)
    marks = ",".join("?" * len(wanted))
    rows: Iterator[tuple[int, str, str]] = conn.execute(
        f"SELECT seq, kind, body FROM audit WHERE kind IN ({marks}) ORDER BY seq", wanted
    )
    return rows


def has_record_of_kind(conn: sqlite3.Connection, kind: str) -> bool:
    return conn.execute("SELECT 1 FROM audit WHERE kind=? LIMIT 1", (kind,)).fetchone() is not None


def all_records(conn: sqlite3.Connection) -> Iterator[tuple[int, float, str, str, str, str]]:
    """(seq, ts, kind, body, prev_hash, hash) of every record, in log order."""
    rows: Iterator[tuple[int, float, str, str, str, str]] = conn.execute(
        "SELECT seq, ts, kind, body, prev_hash, hash FROM audit ORDER BY seq"
    )
    return rows
