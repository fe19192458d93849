"""The companion's journal of main-account transactions it signed for approvals.

An approval is a main-key-signed transaction that travels through the bridge. A bridge that drops
it (and reports an error, or nothing) keeps a transaction anyone can broadcast until the main
account uses that nonce, while the signer, which never saw it, lets the request expire. So every
approval is written here before it is sent, and stays "unsettled" until a nonce quote signed by
the signer shows its nonce *mined*. Nothing the bridge says on its own settles an entry, not even a
reply that reads "signed": the signer does not sign its answers, so the bridge could write that.
A mempool count settles nothing either: a held transaction the bridge puts in a mempool can be
evicted and sent again later. A settled entry is still re-checked for a while (CONFIRM_QUOTES
later quotes over CONFIRM_SECONDS of the signer's clock) and reopened if a newer quote shows its
nonce unmined again (a reorg); a quote no newer than one the entry has seen is a replay and ignored.

The journal also remembers which requests were approved, so a request the bridge delivers again
is signed again only at the nonce it was first signed at (the very same transaction), never at a
new one: a bridge that kept the first approval and sent it itself cannot get the recipient paid twice.

Only what the user needs to recognise and void a transaction is kept (request, chain, nonce, hash,
recipient, value, the signer's one-line summary): never the raw transaction, never key material.
The file is 0600 in the companion's 0700 home (both checked on every read), replaced atomically,
and every change is a read-modify-write under an exclusive lock, so `run` and `outstanding` in two
processes never lose each other's entries. It is bounded: the oldest settled entries go first; an
unsettled one is never dropped, and past MAX_UNSETTLED of them the companion refuses to sign
another approval.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypedDict, TypeVar

from companion_bridge.companion.journal_file import VERSION, JournalError, check_private_dir, parse
from companion_bridge.companion.quotes import NonceQuote
from policies.kernel.addresses import to_checksum
from policies.kernel.files import check_private_file, write_private_file
from policies.kernel.locks import file_lock
from policies.kernel.text import one_line
from signer.wire.approval_request import ApprovalRequestBody, MainTx

__all__ = ["Entry", "Journal", "JournalError", "JournalFull", "admit", "apply_quote"]

JOURNAL = "journal.json"
LOCK = ".journal.lock"
MAX_ENTRIES = 200
MAX_UNSETTLED = 50
SUMMARY_CHARS = 200
CONFIRM_QUOTES = 3  # later mined quotes that must still show a settled entry's nonce used...
CONFIRM_SECONDS = 600.0  # ...over at least this long (the signer's clock) before it is no longer re-checked
T = TypeVar("T")


class JournalFull(JournalError):
    pass


class SettledBy(TypedDict):
    main_nonce_mined: int  # the main account's mined transaction count the signer quoted
    quote_ts: float  # that quote's `ts` (the signer's clock)


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
    quoted_at: float | None = None  # `ts` (the signer's clock) of the fresh signed quote fetched to sign it
    seen_ts: float | None = None  # `ts` of the newest signed quote applied: no older one counts any more
    settled_at: float | None = None
    settled_by: SettledBy | None = None  # the first mined quote showing it used
    confirmed: int = 0  # later mined quotes that still showed it used

    @property
    def settled(self) -> bool:
        return self.settled_at is not None

    @property
    def final(self) -> bool:
        """Settled, and confirmed long enough that it is no longer worth a quote of its own."""
        if self.settled_by is None or self.seen_ts is None:
            return False
        return (
            self.confirmed >= CONFIRM_QUOTES and self.seen_ts - self.settled_by["quote_ts"] >= CONFIRM_SECONDS
        )

    @classmethod
    def for_approval(
        cls,
        request: ApprovalRequestBody,
        tx: MainTx,
        tx_hash: str,
        quoted_at: float | None = None,
        now: float | None = None,
    ) -> Entry:
        return cls(
            request_id=str(request["request_id"]),
            chain_id=int(tx["chain_id"]),
            nonce=int(tx["nonce"]),
            tx_hash=tx_hash,
            to=to_checksum(tx["to"]),
            value=str(int(tx["value"])),
            summary=one_line(str(request.get("summary") or ""), SUMMARY_CHARS),
            signed_at=time.time() if now is None else now,
            quoted_at=quoted_at,
        )


def refuse_if_full(unsettled: int, max_unsettled: int) -> None:
    if unsettled >= max_unsettled:
        raise JournalFull(
            f"{unsettled} approvals you signed are still unsettled (their nonces are not used as far as "
            "your signer has said): nothing more is signed until they are. Run `owlia companion outstanding` "
            "and void the ones you do not want (send any transaction from the main account at that nonce)."
        )


def admit(
    entries: list[Entry], entry: Entry, *, max_entries: int = MAX_ENTRIES, max_unsettled: int = MAX_UNSETTLED
) -> list[Entry]:
    """`entries` with `entry` added and the oldest settled ones dropped down to `max_entries`, final
    ones first (the others are still re-checked in case of a reorg). Raises JournalFull (changing
    nothing) if `max_unsettled` entries are unsettled already."""
    assert 0 < max_unsettled <= max_entries  # so there is always a settled entry to drop
    if any(e.tx_hash == entry.tx_hash for e in entries):
        return list(entries)  # the same signed transaction again (same fields, same nonce)
    refuse_if_full(sum(not e.settled for e in entries), max_unsettled)
    kept = [*entries, entry]
    excess = len(kept) - max_entries
    droppable = [e for e in kept if e.final] + [e for e in kept if e.settled and not e.final]
    for old in droppable[: max(excess, 0)]:
        kept.remove(old)
    return kept


def apply_quote(entries: list[Entry], quote: NonceQuote, main_address: str, now: float | None = None) -> bool:
    """Let a verified quote settle, confirm or reopen entries; True if any entry changed.

    Only the mined count counts: an entry settles when it shows the entry's nonce mined, and a
    settled one reopens when a newer quote shows it unmined. Each entry takes only quotes newer
    than the newest it has seen, so a replayed older quote never settles or re-settles anything;
    and none older than the quote it was signed with (replayed from before a chain reset, say).
    An entry signed without a fresh quote takes only quotes fresh by this device's clock, `now`.
    A quote about another account, or without a mined count (an older signer), says nothing."""
    if quote.main_nonce_mined is None or quote.main_account.lower() != main_address.lower():
        return False
    now = time.time() if now is None else now
    changed = False
    for entry in entries:
        mined = quote.main_nonce_mined.get(entry.chain_id)
        if mined is None or (entry.seen_ts is not None and quote.ts <= entry.seen_ts):
            continue
        if entry.quoted_at is not None and quote.ts < entry.quoted_at:
            continue
        if entry.quoted_at is None and not quote.fresh(now):
            continue
        entry.seen_ts, changed = quote.ts, True
        if mined > entry.nonce and not entry.settled:
            entry.settled_at, entry.settled_by = now, {"main_nonce_mined": mined, "quote_ts": quote.ts}
            entry.confirmed = 0
        elif mined > entry.nonce:
            entry.confirmed += 1
        elif entry.settled:
            entry.settled_at = entry.settled_by = None
            entry.confirmed = 0
    return changed


class Journal:
    def __init__(
        self, home: Path, *, max_entries: int = MAX_ENTRIES, max_unsettled: int = MAX_UNSETTLED
    ) -> None:
        self.home = Path(home)
        self.path = self.home / JOURNAL
        self._lock_path = self.home / LOCK
        self.max_entries, self.max_unsettled = max_entries, max_unsettled

    def entries(self) -> list[Entry]:
        return self._update(lambda entries: (list(entries), False))

    def unsettled(self) -> list[Entry]:
        return [e for e in self.entries() if not e.settled]

    def watched(self) -> list[Entry]:
        """Entries still worth asking the signer about: unsettled, or settled but not yet final."""
        return [e for e in self.entries() if not e.final]

    def approved(self, request_id: str) -> Entry | None:
        """The first approval this companion signed for `request_id`, if any."""
        return next((e for e in self.entries() if e.request_id == request_id), None)

    def check_room(self) -> None:
        """Raise JournalFull before a main key is touched for an approval that could not be recorded."""
        refuse_if_full(len(self.unsettled()), self.max_unsettled)

    def record(self, entry: Entry) -> None:
        self._update(
            lambda entries: (
                None,
                admit(entries, entry, max_entries=self.max_entries, max_unsettled=self.max_unsettled),
            )
        )

    def note_reply(self, tx_hash: str, reply: str) -> None:
        def note(entries: list[Entry]) -> tuple[None, bool]:
            for entry in entries:
                if entry.tx_hash == tx_hash:
                    entry.reply = one_line(reply, SUMMARY_CHARS)
                    return None, True
            return None, False

        self._update(note)

    def apply(self, quote: NonceQuote, main_address: str) -> None:
        self._update(lambda entries: (None, apply_quote(entries, quote, main_address)))

    # ---- storage ------------------------------------------------------------------------------

    def _update(self, change: Callable[[list[Entry]], tuple[T, list[Entry] | bool]]) -> T:
        """Read, change, and write back (if `change` says so: True, or a new list) under the lock.
        Any OSError on the way (lock file, temp file, a full disk) is a JournalError: worded."""
        check_private_dir(self.home)
        try:
            with self._locked():
                entries = self._load()
                result, outcome = change(entries)
                if outcome is not False:
                    self._save(entries if outcome is True else outcome)
                return result
        except OSError as exc:
            raise JournalError(
                f"the approval journal in {self.home} cannot be used ({exc.strerror or type(exc).__name__})"
            ) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with file_lock(self._lock_path):
            yield

    def _load(self) -> list[Entry]:
        if not self.path.exists():
            return []
        try:
            check_private_file(self.path)
        except PermissionError as exc:
            raise JournalError(f"the approval journal is not private: {exc}") from None
        return [Entry(**fields) for fields in parse(self.path.read_bytes(), self.path)]

    def _save(self, entries: list[Entry]) -> None:
        body = {"v": VERSION, "entries": [asdict(e) for e in entries]}
        write_private_file(self.path, json.dumps(body, indent=1).encode())
