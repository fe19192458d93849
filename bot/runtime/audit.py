"""The bot's own audit log: every tool call, before and after, as redacted JSON lines.

The signer keeps the authoritative, hash-chained record of everything it signs; this log answers
the other question — what did the model ask for, what did the user confirm, what did a tool
return — so a hijacked conversation can be reconstructed. Each line is hash-chained to the one
before it and fsync'd; arguments and results pass through the secret redactor first.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from policies.kernel.files import ensure_private_dir

GENESIS = "0" * 64


def _last_hash(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 65536))
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return GENESIS
    for line in reversed(lines):
        try:
            return str(json.loads(line)["hash"])
        except (ValueError, KeyError, TypeError):
            continue
    return GENESIS


class BotAudit:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        ensure_private_dir(self.path.parent)
        self._lock = threading.Lock()
        self._prev = _last_hash(self.path)

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        from bot.security.redact import redact_obj

        body = redact_obj(fields)
        with self._lock:
            entry = {"ts": round(time.time(), 6), "kind": kind, **body, "prev": self._prev}
            digest = hashlib.sha256(json.dumps(entry, sort_keys=True, default=str).encode()).hexdigest()
            entry["hash"] = digest
            line = (json.dumps(entry, sort_keys=True, default=str) + "\n").encode()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._prev = digest
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
