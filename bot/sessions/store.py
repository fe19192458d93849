"""JSONL session files: one per `channel:peer`, appended one whole line at a time.

Each append is a single write of one complete line on an O_APPEND descriptor, then fsync, so a
crash leaves at most one torn last line, which loading drops (and reports) instead of failing.
Corruption anywhere else is not a crash artifact, so loading refuses it (fail closed).
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError

from bot.sessions import turns, window
from bot.sessions.records import (
    MessageRecord,
    MetaRecord,
    MetaUpdateRecord,
    SeenRecord,
    Usage,
    dump_line,
    parse_line,
)
from policies.kernel.files import FILE_MODE, DamagedFile, damaged, ensure_private_dir, write_private_file

log = logging.getLogger(__name__)

# channel:peer for DMs, channel:chat:peer for per-user sessions in a group (ids may be negative on Telegram)
KEY_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}(:[A-Za-z0-9_.@+-]{1,128}){1,2}")
SUMMARY_HEADER = "[Summary of earlier conversation — written by the assistant, not by the user]"
PARSED_TURNS = 50
"""User turns of an open conversation kept parsed in memory (with the pinned and must-keep records
before them): enough for `history()` up to this many turns. Older records stay only in the file,
which `messages`, `compact` and longer histories read back, so a long chat does not grow the bot."""
TRIM_AT_TURNS = 2 * PARSED_TURNS  # trim when this many are parsed: amortised, not per message
MAX_SEEN_CARRIED = 1_000  # inbound ids remembered against redelivery, in memory and across a rewrite


class SessionCorrupt(DamagedFile, ValueError):
    """A session file is damaged somewhere other than its last line: refused whole, never rewritten."""


@dataclass
class SessionState:
    meta: MetaRecord
    messages: list[MessageRecord] = field(default_factory=list)
    seen: dict[str, None] = field(default_factory=dict)  # insertion-ordered, oldest first
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    torn_tail: bool = False


def session_filename(key: str) -> str:
    if not isinstance(key, str) or not KEY_RE.fullmatch(key):
        raise ValueError(f"invalid session key {key!r}; expected channel:peer or channel:chat:peer")
    return quote(key, safe="") + ".jsonl"


def _load(path: Path) -> tuple[SessionState | None, int | None]:
    """Parse a file; returns (state, byte offset of a torn last line to truncate, or None)."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # `tail` is non-empty only if the last line lacks "\n"
    state: SessionState | None = None
    torn_at: int | None = len(data) - len(tail) if tail else None
    offset = 0
    for number, raw in enumerate(complete, start=1):
        try:
            record = parse_line(raw.decode("utf-8"))
        except (ValidationError, UnicodeDecodeError) as exc:
            if number == len(complete) and tail == b"":  # a bad but newline-terminated last line
                torn_at = offset
                break
            raise damaged(path, f"a damaged session (line {number} is not a record)", SessionCorrupt) from exc
        offset += len(raw) + 1
        if state is None:
            if not isinstance(record, MetaRecord):
                raise damaged(path, "a damaged session (its first line is not a meta record)", SessionCorrupt)
            state = SessionState(meta=record, model=record.model)
        elif isinstance(record, MessageRecord):
            state.messages.append(record)
        elif isinstance(record, SeenRecord):
            state.seen.update(dict.fromkeys(record.ids))
            while len(state.seen) > MAX_SEEN_CARRIED:
                del state.seen[next(iter(state.seen))]
        elif isinstance(record, MetaUpdateRecord):
            state.usage = record.usage
            state.model = record.model or state.model
        else:
            raise damaged(path, f"a damaged session (line {number} is a second meta record)", SessionCorrupt)
    if state is not None:
        state.torn_tail = torn_at is not None
    return state, torn_at


class Session:
    """One conversation; not thread-safe: hold `session_lock(key)` while handling a message."""

    def __init__(self, path: Path, key: str, model: str | None) -> None:
        self.path, self.key = path, key
        state, torn_at = _load(path) if path.exists() else (None, None)
        if torn_at is not None:
            log.warning("session %s: dropped a torn last line at byte %d", key, torn_at)
            with open(path, "r+b") as handle:
                handle.truncate(torn_at)
        if state is None:
            state = SessionState(meta=MetaRecord(key=key, created_at=time.time(), model=model), model=model)
            write_private_file(path, dump_line(state.meta))
        if state.meta.key != key:
            raise damaged(path, f"a session of {state.meta.key!r}, not of {key!r}", SessionCorrupt)
        self.state = state
        self.partial = False  # True once older records were dropped from memory (they stay in the file)
        self._trim()
        self.torn_tail_dropped = torn_at is not None
        self.stamp = _stamp(os.stat(path))
        self.interrupted: MessageRecord | None = None  # a turn a restart cut off, not yet told to the user
        self._withdraw_orphan()

    def _withdraw_orphan(self) -> None:
        """A turn left open by a process that is gone was interrupted: withdraw it, remember to say so."""
        turn = turns.open_turn(self.state.messages)
        if turn is not None and turn.owner is not None and not turns.owner_alive(turn.owner):
            self.withdraw(turn.id, turns.Withdrawn.INTERRUPTED)
            self.interrupted = turn

    def _append(self, record: Any) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW, FILE_MODE)
        try:
            line = dump_line(record)
            written = os.write(fd, line)
            if written != len(line):  # regular files do not short-write in practice; fail loudly if one does
                raise OSError(f"short write to {self.path}")
            os.fsync(fd)
            self.stamp = _stamp(os.fstat(fd))
        finally:
            os.close(fd)

    @property
    def messages(self) -> list[MessageRecord]:
        """The whole transcript (read back from the file when older records are not in memory)."""
        return self._all()

    def _all(self) -> list[MessageRecord]:
        if not self.partial:
            return list(self.state.messages)
        state, _ = _load(self.path)
        return list(state.messages) if state is not None else []

    def _trim(self, *, force: bool = False) -> None:
        """Keep parsed only what `history(PARSED_TURNS)` needs: summaries, must-keep records (kept
        records, sign results and their calls) and the recent window; same order as in the file."""
        msgs = self.state.messages
        if not force and sum(1 for m in msgs if m.role == "user" and m.kind == "normal") <= TRIM_AT_TURNS:
            return
        start = window.window_start(msgs, PARSED_TURNS)
        kept = {id(m) for m in window.must_keep(msgs[:start])}
        older = [m for m in msgs[:start] if m.kind == "summary" or m.keep or id(m) in kept]
        self.state.messages = older + msgs[start:]
        self.partial = True

    @property
    def usage(self) -> Usage:
        return self.state.usage

    def append(
        self,
        role: str,
        parts: Sequence[dict[str, Any]],
        *,
        keep: bool = False,
        message_id: str | None = None,
        owner: str | None = None,
    ) -> MessageRecord:
        record = MessageRecord(
            id=message_id or uuid.uuid4().hex,
            role=role,
            parts=list(parts),
            ts=time.time(),
            keep=keep,
            owner=owner,
        )
        self._append(record)
        self.state.messages.append(record)
        if self.partial and self._answers_a_dropped_call(record):
            # A result whose call was trimmed away (the call came before the window, its result
            # after): read the transcript back and trim again, so the call travels with it.
            self.state.messages = self._all()
            self._trim(force=True)
        else:
            self._trim()
        return record

    def _answers_a_dropped_call(self, record: MessageRecord) -> bool:
        answered = window.result_ids(record)
        if not answered:
            return False
        in_memory = set().union(*(window.call_ids(m) for m in self.state.messages))
        return not answered <= in_memory

    def withdraw(self, message_id: str, why: turns.Withdrawn) -> MessageRecord:
        """Mark a user turn as no longer a request: it replays to the model as a withdrawn note."""
        record = MessageRecord(
            id=uuid.uuid4().hex,
            role="user",
            kind="withdrawn",
            ts=time.time(),
            parts=[{"type": "withdrawn", "ref": message_id, "why": why.value}],
        )
        self._append(record)
        self.state.messages.append(record)
        return record

    def take_interrupted(self) -> MessageRecord | None:
        """The turn a restart cut off, once: the caller tells the user about it."""
        turn, self.interrupted = self.interrupted, None
        return turn

    def seen(self, message_id: str) -> bool:
        """True if this inbound id was already handled (drop it); otherwise record it and return False."""
        if message_id in self.state.seen:
            return True
        self._append(SeenRecord(ids=[message_id]))
        seen = self.state.seen
        seen[message_id] = None
        if len(seen) > MAX_SEEN_CARRIED:  # redeliveries are recent: keep as many ids as a rewrite carries
            del seen[next(iter(seen))]
        return False

    def add_usage(self, input_tokens: int = 0, output_tokens: int = 0, model: str | None = None) -> Usage:
        usage = Usage(
            input_tokens=self.state.usage.input_tokens + input_tokens,
            output_tokens=self.state.usage.output_tokens + output_tokens,
        )
        self._append(MetaUpdateRecord(usage=usage, model=model or self.state.model))
        self.state.usage, self.state.model = usage, model or self.state.model
        return usage

    def history(self, max_turns: int = 20) -> list[MessageRecord]:
        if self.partial and max_turns > PARSED_TURNS:  # older turns than memory holds: from the file
            return window.history(self._all(), max_turns)
        return window.history(self.state.messages, max_turns)

    def _archive(self) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 1_000_000_000:09d}"
        archived = self.path.with_name(f"{self.path.stem}.{stamp}.jsonl.archived")
        os.link(self.path, archived)  # keep the old transcript; the live name is replaced atomically next
        return archived

    def _rewrite(self, messages: Sequence[MessageRecord], usage: Usage) -> None:
        seen = list(self.state.seen)[-MAX_SEEN_CARRIED:]
        meta = MetaRecord(key=self.key, created_at=time.time(), model=self.state.model)
        lines = [dump_line(meta), dump_line(SeenRecord(ids=seen))]
        if usage != Usage():
            lines.append(dump_line(MetaUpdateRecord(usage=usage, model=self.state.model)))
        lines.extend(dump_line(m) for m in messages)
        write_private_file(self.path, b"".join(lines))
        self.stamp = _stamp(os.stat(self.path))
        self.state = SessionState(
            meta=meta, messages=list(messages), seen=dict.fromkeys(seen), usage=usage, model=meta.model
        )
        self.partial = False
        self._trim()

    def new(self) -> Path:
        """`/new`: archive this transcript and start empty (redelivery dedupe carries over)."""
        archived = self._archive()
        self._rewrite([], Usage())
        return archived

    def compact(
        self, summary: str, keep_turns: int = 0, sign_tools: frozenset[str] = window.SIGN_TOOL_NAMES
    ) -> Path:
        """`/compact`: old history becomes a marked user-role summary; must-keep items stay verbatim."""
        msgs = self._all()
        start = window.window_start(msgs, keep_turns)
        kept = window.must_keep(msgs[:start], sign_tools)
        kept_ids = {m.id for m in kept}
        # a kept call whose result is in the recent window (or vice versa) stays paired either way
        note = MessageRecord(
            id=uuid.uuid4().hex,
            role="user",
            kind="summary",
            ts=time.time(),
            parts=[{"type": "text", "text": f"{SUMMARY_HEADER}\n\n{summary.strip()}"}],
        )
        archived = self._archive()
        self._rewrite([note, *[m for m in msgs[:start] if m.id in kept_ids], *msgs[start:]], self.state.usage)
        return archived


def _stamp(info: os.stat_result) -> tuple[int, int, int]:
    """What changes whenever anyone writes the file: appends grow it, rewrites replace the inode."""
    return info.st_ino, info.st_size, info.st_mtime_ns


class SessionStore:
    """Sessions under one 0700 directory, opened by `channel:peer` key.

    Parsed sessions are kept (up to CACHE_SIZE) and reused only while the file is exactly as this
    process last wrote it, so a concurrent `owlia chat -m` appending to the same file is re-read.
    """

    CACHE_SIZE = 64

    def __init__(self, directory: Path) -> None:
        self.directory = ensure_private_dir(Path(directory))
        self._cache: OrderedDict[str, Session] = OrderedDict()

    def open(self, key: str, model: str | None = None) -> Session:
        path = self.directory / session_filename(key)
        cached = self._cache.get(key)
        if cached is not None:
            try:
                if _stamp(os.stat(path)) == cached.stamp:
                    self._cache.move_to_end(key)
                    return cached
            except FileNotFoundError:
                pass
        session = Session(path, key, model)
        self._cache[key] = session
        self._cache.move_to_end(key)
        while len(self._cache) > self.CACHE_SIZE:
            self._cache.popitem(last=False)
        return session

    def seen(self, key: str, message_id: str) -> bool:
        return self.open(key).seen(message_id)
