"""Who may talk to the bot: default deny, with pairing codes the owner approves.

A chat bot's username is public, so anyone can DM it. Only ids in the channel's `allow_from` and
peers the owner paired get through; a stranger gets a one-time pairing code and nothing else (no
model, no tools, no hint of what the bot holds). The owner approves the code out of band
(`owlia pair approve CODE` or `/pair approve CODE` from an owner DM). Codes are short-lived and
few at a time, so a flood of strangers cannot fill the list, and they are compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from bot.config import PairingSettings
from policies.kernel.files import open_private_db

ACCESS_DB = "access.sqlite3"
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no I, L, O, 0, 1: codes are read aloud and retyped
CODE_LENGTH = 8
TELL_AGAIN_AFTER = 60.0  # seconds before the same stranger is answered again ("still waiting")
FOLLOW_UPS_ANSWERED = 1  # quick follow-ups answered within that minute; more are ignored (a flood)
MAX_TOLD = 10_000  # strangers remembered for that rate limit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS grants (
    channel TEXT NOT NULL, peer TEXT NOT NULL, display TEXT NOT NULL,
    approved_at REAL NOT NULL, approved_by TEXT NOT NULL,
    PRIMARY KEY (channel, peer)
);
CREATE TABLE IF NOT EXISTS pairing (
    code TEXT PRIMARY KEY, channel TEXT NOT NULL, peer TEXT NOT NULL, display TEXT NOT NULL,
    created_at REAL NOT NULL, expires_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class PairingRequest:
    code: str
    channel: str
    peer: str
    display: str
    created_at: float
    expires_at: float


@dataclass(frozen=True)
class Grant:
    channel: str
    peer: str
    display: str
    approved_at: float
    approved_by: str


class PairingError(Exception):
    """A code that is unknown, expired or malformed; the message is safe to show."""


def normalize_code(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch not in " -_")


def printable(text: str, limit: int = 64) -> str:
    """A stranger's display name without control characters (it is shown in the owner's terminal)."""
    return "".join(ch for ch in text if ch.isprintable())[:limit]


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


class AccessStore:
    def __init__(
        self,
        path: Path,
        *,
        code_ttl: int = 3600,
        max_pending: int = 3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.conn = open_private_db(path, schema=_SCHEMA)
        self.code_ttl = code_ttl
        self.max_pending = max_pending
        self.clock = clock

    def close(self) -> None:
        self.conn.close()

    def _purge(self, now: float) -> None:
        self.conn.execute("DELETE FROM pairing WHERE expires_at <= ?", (now,))

    def is_paired(self, channel: str, peer: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM grants WHERE channel=? AND peer=?", (channel, peer)).fetchone()
        return row is not None

    def request(self, channel: str, peer: str, display: str = "") -> PairingRequest | None:
        """The peer's live code, or a new one; None while `max_pending` codes are live."""
        now = self.clock()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._purge(now)
            row = self.conn.execute(
                "SELECT * FROM pairing WHERE channel=? AND peer=?", (channel, peer)
            ).fetchone()
            if row is not None:
                self.conn.execute("COMMIT")
                return PairingRequest(*row)
            (live,) = self.conn.execute("SELECT COUNT(*) FROM pairing").fetchone()
            if live >= self.max_pending:
                self.conn.execute("COMMIT")
                return None
            request = PairingRequest(new_code(), channel, peer, printable(display), now, now + self.code_ttl)
            self.conn.execute(
                "INSERT INTO pairing VALUES (?, ?, ?, ?, ?, ?)",
                (request.code, channel, peer, request.display, now, request.expires_at),
            )
            self.conn.execute("COMMIT")
            return request
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def approve(self, code: str, by: str) -> Grant:
        wanted = normalize_code(code)
        if len(wanted) != CODE_LENGTH:
            raise PairingError(f"a pairing code has {CODE_LENGTH} characters")
        now = self.clock()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._purge(now)
            match = None
            for row in self.conn.execute("SELECT * FROM pairing").fetchall():  # at most max_pending rows
                if hmac.compare_digest(row[0].encode(), wanted.encode()):
                    match = PairingRequest(*row)
            if match is None:
                raise PairingError(
                    f"no pending pairing with that code (codes expire after {self.code_ttl // 60} minutes)"
                )
            grant = Grant(match.channel, match.peer, match.display, now, by)
            self.conn.execute("DELETE FROM pairing WHERE code=?", (match.code,))
            self.conn.execute(
                "INSERT OR REPLACE INTO grants VALUES (?, ?, ?, ?, ?)",
                (grant.channel, grant.peer, grant.display, now, by),
            )
            self.conn.execute("COMMIT")
            return grant
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def revoke(self, channel: str, peer: str) -> bool:
        cur = self.conn.execute("DELETE FROM grants WHERE channel=? AND peer=?", (channel, peer))
        return cur.rowcount > 0

    def pending(self) -> list[PairingRequest]:
        self._purge(self.clock())
        return [PairingRequest(*r) for r in self.conn.execute("SELECT * FROM pairing ORDER BY created_at")]

    def grants(self) -> list[Grant]:
        return [Grant(*r) for r in self.conn.execute("SELECT * FROM grants ORDER BY approved_at")]


@dataclass(frozen=True)
class Admission:
    allowed: bool
    reply: str | None = None  # what to tell a stranger; None: say nothing


class Gatekeeper:
    """Admission for one channel. A stranger hears their code, then a short "still waiting" for a
    quick follow-up (FOLLOW_UPS_ANSWERED per minute), so nobody writes into silence; a flood is not
    answered message by message."""

    def __init__(self, access: AccessStore, channel: str, allow_from: Iterable[str]) -> None:
        self.access = access
        self.channel = channel
        self.allow_from = frozenset(str(peer) for peer in allow_from)
        self._told: dict[str, float] = {}
        self._followed: dict[str, int] = {}  # follow-ups answered since `_told`

    def admits(self, peer: str) -> bool:
        """Allowed already, without side effects (groups: strangers get no pairing code in public)."""
        return str(peer) in self.allow_from or self.access.is_paired(self.channel, str(peer))

    def admit(self, peer: str, display: str = "") -> Admission:
        peer = str(peer)
        if self.admits(peer):
            return Admission(True)
        now = self.access.clock()
        told = self._told.get(peer)
        if told is not None and now - told < TELL_AGAIN_AFTER:
            answered = self._followed.get(peer, 0)
            if answered >= FOLLOW_UPS_ANSWERED:
                return Admission(False)
            self._followed[peer] = answered + 1
            return Admission(
                False,
                "I got your message, but this bot is private: it answers once its owner "
                "approves the pairing code I sent you above. You will be told here.",
            )
        if len(self._told) >= MAX_TOLD:
            self._told.clear()
            self._followed.clear()
        self._told[peer] = now
        self._followed.pop(peer, None)
        request = self.access.request(self.channel, peer, display)
        if request is None:
            return Admission(
                False, "This bot is private and cannot take new pairing requests right now. Try again later."
            )
        minutes = max(1, round((request.expires_at - now) / 60))
        if told is not None and request.created_at <= told:  # they wrote again before the owner approved
            return Admission(
                False,
                f"Still waiting for the owner to approve your pairing code {request.code} "
                f"(valid {minutes} more min). You will be told here once you are in.",
            )
        return Admission(
            False,
            f"This bot is private. Your pairing code is {request.code} (valid {minutes} min). "
            f"Ask its owner to run: owlia pair approve {request.code}. You will be told here "
            "once you are in.",
        )


def open_access(home: Path, settings: PairingSettings) -> AccessStore:
    """The home's access store, `<home>/state/access.sqlite3`."""
    return AccessStore(
        home / "state" / ACCESS_DB, code_ttl=settings.code_ttl_seconds, max_pending=settings.max_pending
    )
