"""The companion's journal of main-account transactions it signed for approvals.

An approval is a main-key-signed transaction that travels through the bridge. A bridge that drops
it (and reports an error, or nothing) keeps a transaction anyone can broadcast until the main
account uses that nonce, while the signer, which never saw it, lets the request expire. So every
approval is written here before it is sent, and stays "unsettled" until a nonce quote signed by
the signer shows its nonce used. Nothing the bridge says on its own settles an entry, not even a
reply that reads "signed": the signer does not sign its answers, so the bridge could write that.

Only what the user needs to recognise and void a transaction is kept (request, chain, nonce, hash,
recipient, value, the signer's one-line summary): never the raw transaction, never key material.
The file is 0600 in the companion's 0700 home, replaced atomically, and every change is a
read-modify-write under an exclusive lock, so `run` and `outstanding` in two processes never lose
each other's entries. It is bounded: the oldest settled entries go first; an unsettled one is never
dropped, and past MAX_UNSETTLED of them the companion refuses to sign another approval.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from companion_bridge.companion.quotes import NonceQuote
from signer.approval_request import to_checksum
from signer.fsperm import check_private_file, write_private_file

JOURNAL = "journal.json"
LOCK = ".journal.lock"
VERSION = 1
MAX_ENTRIES = 200
MAX_UNSETTLED = 50
SUMMARY_CHARS = 200
T = TypeVar("T")


class JournalError(Exception):
    """Worded for the user."""


class JournalFull(JournalError):
    pass


@dataclass
class Entry:
    request_id: str
    chain_id: int
    nonce: int
    tx_hash: str
    to: str
    value: str  # wei, as a decimal string
    summary: str
    signed_at: float
    reply: str = ""  # what came back through the bridge: a hint for the user, never proof
    quoted_at: float | None = None  # `ts` (the signer's clock) of the last signed quote before signing
    settled_at: float | None = None
    settled_by: dict[str, Any] | None = None  # the signed quote that settled it: main_nonce, quote_ts

    @property
    def settled(self) -> bool:
        return self.settled_at is not None

    @classmethod
    def for_approval(cls, request: dict[str, Any], tx: dict[str, Any], tx_hash: str,
                     quoted_at: float | None = None, now: float | None = None) -> Entry:
        return cls(request_id=str(request["request_id"]), chain_id=int(tx["chain_id"]), nonce=int(tx["nonce"]),
                   tx_hash=tx_hash, to=to_checksum(tx["to"]), value=str(int(tx["value"])),
                   summary=str(request.get("summary") or "")[:SUMMARY_CHARS],
                   signed_at=time.time() if now is None else now, quoted_at=quoted_at)


def refuse_if_full(unsettled: int, max_unsettled: int) -> None:
    if unsettled >= max_unsettled:
        raise JournalFull(
            f"{unsettled} approvals you signed are still unsettled (their nonces are not used as far as "
            "your signer has said): nothing more is signed until they are. Run `owlia companion outstanding` "
            "and void the ones you do not want (send any transaction from the main account at that nonce).")


def admit(entries: list[Entry], entry: Entry, *, max_entries: int = MAX_ENTRIES,
          max_unsettled: int = MAX_UNSETTLED) -> list[Entry]:
    """`entries` with `entry` added and the oldest settled ones dropped down to `max_entries`.
    Raises JournalFull (changing nothing) if `max_unsettled` entries are unsettled already."""
    assert 0 < max_unsettled <= max_entries  # so there is always a settled entry to drop
    if any(e.tx_hash == entry.tx_hash for e in entries):
        return list(entries)  # the same signed transaction again (same fields, same nonce)
    refuse_if_full(sum(not e.settled for e in entries), max_unsettled)
    kept = [*entries, entry]
    excess = len(kept) - max_entries
    for old in [e for e in kept if e.settled][:max(excess, 0)]:
        kept.remove(old)
    return kept


def apply_quote(entries: list[Entry], quote: NonceQuote, main_address: str, now: float | None = None) -> bool:
    """Settle every entry whose nonce the signed quote shows used; reopen a settled one that a later
    quote shows unused again (a transaction dropped from the mempool frees its nonce). True if any
    entry changed. A quote about another account, or older than the one the entry was signed after
    (replayed from before a chain reset, say), says nothing about it. Times are compared only with
    times in the signer's own clock: the companion's may be off by any amount."""
    if quote.main_account.lower() != main_address.lower():
        return False
    now = time.time() if now is None else now
    changed = False
    for entry in entries:
        next_nonce = quote.main_nonce.get(entry.chain_id)
        if next_nonce is None or (entry.quoted_at is not None and quote.ts < entry.quoted_at):
            continue
        if next_nonce > entry.nonce and not entry.settled:
            entry.settled_at, entry.settled_by = now, {"main_nonce": next_nonce, "quote_ts": quote.ts}
            changed = True
        elif next_nonce <= entry.nonce and entry.settled_by and quote.ts > entry.settled_by["quote_ts"]:
            entry.settled_at = entry.settled_by = None
            changed = True
    return changed


class Journal:
    def __init__(self, home: Path, *, max_entries: int = MAX_ENTRIES, max_unsettled: int = MAX_UNSETTLED) -> None:
        self.path = Path(home) / JOURNAL
        self._lock_path = Path(home) / LOCK
        self.max_entries, self.max_unsettled = max_entries, max_unsettled

    def entries(self) -> list[Entry]:
        return self._update(lambda entries: (list(entries), False))

    def unsettled(self) -> list[Entry]:
        return [e for e in self.entries() if not e.settled]

    def check_room(self) -> None:
        """Raise JournalFull before a main key is touched for an approval that could not be recorded."""
        refuse_if_full(len(self.unsettled()), self.max_unsettled)

    def record(self, entry: Entry) -> None:
        self._update(lambda entries: (None, admit(entries, entry, max_entries=self.max_entries,
                                                  max_unsettled=self.max_unsettled)))

    def note_reply(self, tx_hash: str, reply: str) -> None:
        def note(entries: list[Entry]) -> tuple[None, bool]:
            for entry in entries:
                if entry.tx_hash == tx_hash:
                    entry.reply = reply[:SUMMARY_CHARS]
                    return None, True
            return None, False

        self._update(note)

    def apply(self, quote: NonceQuote, main_address: str) -> None:
        self._update(lambda entries: (None, apply_quote(entries, quote, main_address)))

    # ---- storage ------------------------------------------------------------------------------

    def _update(self, change: Callable[[list[Entry]], tuple[T, list[Entry] | bool]]) -> T:
        """Read, change, and write back (if `change` says so: True, or a new list) under the lock."""
        with self._locked():
            entries = self._load()
            result, outcome = change(entries)
            if outcome is not False:
                self._save(entries if outcome is True else outcome)
            return result

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _load(self) -> list[Entry]:
        if not self.path.exists():
            return []
        try:
            check_private_file(self.path)
        except PermissionError as exc:
            raise JournalError(f"the approval journal is not private: {exc}") from None
        names = {f.name for f in fields(Entry)}
        try:
            data = json.loads(self.path.read_text())
            return [Entry(**{k: v for k, v in item.items() if k in names}) for item in data["entries"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise JournalError(f"the approval journal {self.path} is unreadable ({type(exc).__name__}): "
                               "move it aside and check the main account's transactions yourself") from None

    def _save(self, entries: list[Entry]) -> None:
        body = {"v": VERSION, "entries": [asdict(e) for e in entries]}
        write_private_file(self.path, json.dumps(body, indent=1).encode())
