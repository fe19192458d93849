"""Session records <-> the LLM layer's messages.

The session file is the source of truth and must replay into a conversation every provider
accepts: roles alternate, every tool call has exactly one result. A run cut off by a crash leaves
calls without results; those get a stated "interrupted" result rather than a silent gap, so the
model never believes an unconfirmed transfer happened (or did not).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from bot.llm.types import Message, Part, TextPart, ToolCall, ToolResult
from bot.sessions.records import MessageRecord
from bot.sessions.turns import WITHDRAWN_NOTE, Withdrawn, withdrawn_refs

INTERRUPTED = "no result: the run was interrupted before this call finished; its outcome is unknown"


def call_part(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "args": dict(call.arguments)}


def result_part(result: ToolResult, name: str, data: Any = None) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": "tool_result",
        "call_id": result.tool_call_id,
        "name": name,
        "content": result.content,
        "is_error": result.is_error,
        "untrusted": result.untrusted,
    }
    if data:
        part["data"] = dict(data)
    return part


OUTCOME_PART = "outcome"  # a slash command's tool data (e.g. /send's signer outcome); never sent to a model


def tool_result_data(records: Sequence[MessageRecord]) -> Iterator[dict[str, Any]]:
    """The structured data tools stored with their results (e.g. the signer's outcomes), in order."""
    for record in records:
        for part in record.parts:
            data = part.get("data") if part.get("type") in ("tool_result", OUTCOME_PART) else None
            if isinstance(data, dict):
                yield data


def _parts(record: MessageRecord, withdrawn: dict[str, Withdrawn]) -> list[Part]:
    if record.kind == "withdrawn":
        return []  # the marker itself says nothing; the turn it names replays as a note
    if record.id in withdrawn:
        return [TextPart(WITHDRAWN_NOTE[withdrawn[record.id]])]
    out: list[Part] = []
    for part in record.parts:
        kind = part.get("type")
        if kind == "text" and part.get("text"):
            out.append(TextPart(str(part["text"])))
        elif kind == "tool_call" and record.role == "assistant":
            out.append(ToolCall(str(part["id"]), str(part["name"]), dict(part.get("args") or {})))
        elif kind == "tool_result" and record.role != "assistant":
            out.append(
                ToolResult(
                    str(part["call_id"]),
                    str(part.get("content", "")),
                    bool(part.get("is_error", False)),
                    bool(part.get("untrusted", True)),
                )
            )
    return out


def to_messages(records: Sequence[MessageRecord]) -> list[Message]:
    """Replay records as alternating user/assistant messages with every call answered.

    A withdrawn turn (cancelled, or cut off by a restart) replays as a note saying so, never as its
    text: merged into the next user message it would otherwise read as a live request.
    """
    withdrawn = withdrawn_refs(records)
    messages: list[tuple[str, list[Part]]] = []
    for record in records:
        role = "assistant" if record.role == "assistant" else "user"
        parts = _parts(record, withdrawn)
        if not parts:
            continue
        if messages and messages[-1][0] == role:
            messages[-1][1].extend(parts)
        else:
            messages.append((role, parts))
    fixed: list[Message] = []
    for index, (role, parts) in enumerate(messages):
        if role == "user":
            answered = {p.tool_call_id for p in parts if isinstance(p, ToolResult)}
            asked = _calls_before(fixed)
            # results first (providers want them right after the calls), unknown results dropped
            results = [p for p in parts if isinstance(p, ToolResult) and p.tool_call_id in asked]
            missing = [
                ToolResult(c, INTERRUPTED, is_error=True, untrusted=False) for c in asked if c not in answered
            ]
            others = [p for p in parts if not isinstance(p, ToolResult)]
            parts = [*results, *missing, *others]
            if not parts:
                continue
        elif fixed and fixed[-1].role == "assistant":
            fixed.append(Message.user("(no reply)"))
        elif not fixed:
            continue  # a conversation opens with the user: nothing is made up before a leading reply
        fixed.append(Message(role, tuple(parts)))  # type: ignore[arg-type]
    asked = _calls_before(fixed)
    if asked:
        fixed.append(
            Message("user", tuple(ToolResult(c, INTERRUPTED, is_error=True, untrusted=False) for c in asked))
        )
    return fixed


def _calls_before(messages: list[Message]) -> list[str]:
    """Ids of the tool calls in the last message, if it is the assistant's."""
    if not messages or messages[-1].role != "assistant":
        return []
    return [p.id for p in messages[-1].parts if isinstance(p, ToolCall)]
