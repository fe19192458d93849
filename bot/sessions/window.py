"""Choose which messages the model sees (sliding window) and which survive compaction.

Pure functions over message records. A tool call and its result always travel together: an
orphaned result (or call) confuses models and can make a signed transaction look unrequested.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.sessions.records import MessageRecord

SIGN_TOOL_NAMES = frozenset({"transfer", "contract_call", "swap", "wrap", "unwrap", "claim"})
"""The sign tools of bot.tools.signing and bot.tools.defi; their results (tx hashes, pending approvals) survive compaction."""


def call_ids(message: MessageRecord) -> set[str]:
    return {str(p["id"]) for p in message.parts if p.get("type") == "tool_call" and "id" in p}


def result_ids(message: MessageRecord) -> set[str]:
    return {str(p["call_id"]) for p in message.parts if p.get("type") == "tool_result" and "call_id" in p}


def is_sign_result(message: MessageRecord, sign_tools: frozenset[str] = SIGN_TOOL_NAMES) -> bool:
    return any(
        p.get("type") == "tool_result"
        and (p.get("name") in sign_tools or str(p.get("name", "")).startswith("sign_"))
        for p in message.parts
    )


def window_start(messages: Sequence[MessageRecord], max_turns: int) -> int:
    """Index where the last `max_turns` real user turns begin, moved back so no result loses its call."""
    if max_turns <= 0:
        return len(messages)
    users = [i for i, m in enumerate(messages) if m.role == "user" and m.kind == "normal"]
    start = 0 if len(users) <= max_turns else users[-max_turns]
    while True:
        needed = set().union(*(result_ids(m) for m in messages[start:])) if start < len(messages) else set()
        earliest = [i for i in range(start) if call_ids(messages[i]) & needed]
        if not earliest:
            return start
        start = min(earliest)


def history(messages: Sequence[MessageRecord], max_turns: int = 20) -> list[MessageRecord]:
    """Summary notes and must-keep items first (as pinned context), then the recent window."""
    start = window_start(messages, max_turns)
    pinned = [m for m in messages[:start] if m.kind == "summary" or m.keep]
    return pinned + list(messages[start:])


def must_keep(
    messages: Sequence[MessageRecord], sign_tools: frozenset[str] = SIGN_TOOL_NAMES
) -> list[MessageRecord]:
    """Messages compaction may not drop: keep=True, sign-tool results, and the calls those results answer."""
    kept = {i for i, m in enumerate(messages) if m.keep or is_sign_result(m, sign_tools)}
    needed = set().union(*(result_ids(messages[i]) for i in kept)) if kept else set()
    kept |= {i for i, m in enumerate(messages) if call_ids(m) & needed}
    calls = set().union(*(call_ids(messages[i]) for i in kept)) if kept else set()
    kept |= {i for i, m in enumerate(messages) if result_ids(m) & calls}
    return [messages[i] for i in sorted(kept)]
