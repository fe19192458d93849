"""The bot's own audit logs: every tool call, before and after, as redacted JSON lines.

The signer keeps the authoritative, hash-chained record of everything it signs; these logs answer
the other question — what did the model ask for, what did the user confirm, what did a tool or a
third-party server return, what did the user allow it — so a hijacked conversation can be
reconstructed. Each line is hash-chained to the one before it and fsync'd; arguments and results
pass through the secret redactor first.

A log has more than one writer: the skills and MCP hosts of one bot share `skills-audit.jsonl`,
and `owlia skill` / `owlia mcp` append their decisions to it from another process while the bot
runs. Each append therefore takes an exclusive lock on the file and links to the record that is
last in the file then, not to the last one this writer wrote.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from bot.security.redact import redact_obj
from policies.kernel.files import ensure_private_dir

GENESIS = "0" * 64
BOT_AUDIT = "bot-audit.jsonl"
SKILLS_AUDIT = "skills-audit.jsonl"
_TAIL = 65536  # first read of a log's end; doubled until it holds the whole last record


def bot_audit_path(home: Path) -> Path:
    """The agent's tool calls: `tool.requested`, `tool.finished`, confirmations."""
    return Path(home) / "logs" / BOT_AUDIT


def skills_audit_path(home: Path) -> Path:
    """Third-party code: what skills and MCP servers did, and what the user decided about them."""
    return Path(home) / "logs" / SKILLS_AUDIT


def _last_hash(fd: int, size: int) -> tuple[str, bool]:
    """The hash of the last record in the first `size` bytes of `fd`, and whether they end a line.

    A torn last line (a writer that died mid-write) is skipped: the chain goes on from the record
    before it, and `verify_audit` still reports the torn line."""
    window = _TAIL
    while True:
        start = max(0, size - window)
        tail = os.pread(fd, size - start, start)
        lines = tail.splitlines()
        if start > 0:
            lines = lines[1:]  # the window's first line may begin before it
        for line in reversed(lines):
            try:
                return str(json.loads(line)["hash"]), tail.endswith(b"\n")
            except (ValueError, KeyError, TypeError):
                continue
        if start == 0:
            return GENESIS, not tail or tail.endswith(b"\n")
        window *= 2


class BotAudit:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        ensure_private_dir(self.path.parent)
        self._lock = threading.Lock()
        self._prev = GENESIS
        self._end = -1  # the log's size after this writer's last append; -1: read its tail first

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        body = redact_obj(fields)
        with self._lock:
            fd = os.open(
                self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # held until the close: one append at a time, across processes
                size = os.fstat(fd).st_size
                prev, whole_lines = self._prev, True
                if size != self._end:  # another writer appended since (or this is our first record)
                    prev, whole_lines = _last_hash(fd, size)
                entry = {"ts": round(time.time(), 6), "kind": kind, **body, "prev": prev}
                digest = hashlib.sha256(json.dumps(entry, sort_keys=True, default=str).encode()).hexdigest()
                entry["hash"] = digest
                line = (json.dumps(entry, sort_keys=True, default=str) + "\n").encode()
                if not whole_lines:
                    line = b"\n" + line  # never glue a record onto a torn line
                written = os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            # A short write left a torn line: the next record reads the tail again and starts a new line.
            self._prev, self._end = digest, (size + written if written == len(line) else -1)
        return entry


def verify_audit(path: Path) -> tuple[bool, int, str]:
    """(ok, records checked, problem) — recomputes every hash and link."""
    prev = GENESIS
    count = 0
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            try:
                entry = json.loads(line)
                stored = entry.pop("hash")
            except (ValueError, KeyError):
                return False, count, f"line {number}: not an audit record"
            if entry.get("prev") != prev:
                return False, count, f"line {number}: broken link (a record was removed or reordered)"
            if hashlib.sha256(json.dumps(entry, sort_keys=True, default=str).encode()).hexdigest() != stored:
                return False, count, f"line {number}: record was edited"
            prev, count = stored, count + 1
    return True, count, ""
