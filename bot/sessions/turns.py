"""Which user turn is still open, and the marker that withdraws one.

A turn the user cancelled, or one a restart cut off, must never reach the model as a live request:
its text stays on disk (the transcript is the record) but replays as a withdrawn note. A turn is
open when the last real user message has no final answer after it: no assistant message without
tool calls, and no results of calls the loop declined to run. Whether it is still running is a
question about its owner: the process that started it, named by pid and start time so a reused
pid is not mistaken for it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import Enum
from functools import cache

from bot.sessions.records import MessageRecord

NOT_RUN_PREFIX = "not run:"


class Withdrawn(str, Enum):
    CANCELLED = "cancelled"  # /cancel
    INTERRUPTED = "interrupted"  # a shutdown or crash while the run was going
    FAILED = "failed"  # the language model could not answer; the user was told to ask again


WITHDRAWN_NOTE = {
    Withdrawn.CANCELLED: "[withdrawn: the user cancelled this request before it finished. It is not a "
    "request any more; do not act on it or bring it up again unless the user asks anew.]",
    Withdrawn.INTERRUPTED: "[withdrawn: this request was interrupted by a restart before it finished. It is not a "
    "request any more; do not act on it unless the user asks again.]",
    Withdrawn.FAILED: "[withdrawn: this request failed because the language model could not answer, and the user "
    "was told to ask again. It is not a request any more; do not act on it unless asked anew.]",
}


@cache
def process_owner() -> str:
    """This process, as `pid:start-ticks` (the 22nd field of /proc/self/stat)."""
    return f"{os.getpid()}:{_start_ticks(os.getpid())}"


def owner_alive(owner: str | None) -> bool:
    """True if the process that wrote `owner` still runs (unknown owners count as gone)."""
    if not owner:
        return False
    pid_text, _, ticks = owner.partition(":")
    if not pid_text.isdigit():
        return False
    return _start_ticks(int(pid_text)) == ticks


def _start_ticks(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return ""
    # the command name (field 2) may hold spaces and parentheses: split after its closing one
    return stat.rpartition(")")[2].split()[19] if ")" in stat else ""


def withdrawn_refs(records: Sequence[MessageRecord]) -> dict[str, Withdrawn]:
    """Ids of withdrawn user messages, with why."""
    refs: dict[str, Withdrawn] = {}
    for record in records:
        if record.kind == "withdrawn":
            for part in record.parts:
                if part.get("type") == "withdrawn":
                    try:
                        refs[str(part.get("ref"))] = Withdrawn(part.get("why"))
                    except ValueError:
                        refs[str(part.get("ref"))] = Withdrawn.INTERRUPTED
    return refs


def open_turn(records: Sequence[MessageRecord]) -> MessageRecord | None:
    """The last real user message, if its run never finished and it was not withdrawn."""
    last = next(
        (
            i
            for i in range(len(records) - 1, -1, -1)
            if records[i].role == "user" and records[i].kind == "normal"
        ),
        None,
    )
    if last is None:
        return None
    message = records[last]
    if message.id in withdrawn_refs(records[last:]):
        return None
    for record in records[last + 1 :]:
        if record.role == "assistant" and not any(p.get("type") == "tool_call" for p in record.parts):
            return None
        if record.role == "tool" and _declined(record):
            return None
    return message


def _declined(record: MessageRecord) -> bool:
    results = [p for p in record.parts if p.get("type") == "tool_result"]
    return bool(results) and all(str(p.get("content", "")).startswith(NOT_RUN_PREFIX) for p in results)


def preview(message: MessageRecord, limit: int = 80) -> str:
    text = " ".join(str(p.get("text", "")) for p in message.parts if p.get("type") == "text")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
