"""The JSONL line formats of a session file, validated with pydantic because disk is a boundary.

A session file is: one `meta` line, then `message`, `seen` and `meta_update` lines in append order.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

FORMAT_VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MetaRecord(_Record):
    type: Literal["meta"] = "meta"
    key: str
    created_at: float
    model: str | None = None
    version: int = FORMAT_VERSION


class Usage(_Record):
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class MetaUpdateRecord(_Record):
    """Carries running totals, so the last one wins and no line needs rewriting."""

    type: Literal["meta_update"] = "meta_update"
    usage: Usage
    model: str | None = None


class MessageRecord(_Record):
    type: Literal["message"] = "message"
    id: str
    role: Literal["user", "assistant", "tool"]
    parts: list[dict[str, Any]]
    ts: float
    keep: bool = False
    # "withdrawn" marks an earlier user turn as cancelled or interrupted (bot.sessions.turns)
    kind: Literal["normal", "summary", "withdrawn"] = "normal"
    owner: str | None = None  # on a user turn: the process running it (bot.sessions.turns.process_owner)


class SeenRecord(_Record):
    type: Literal["seen"] = "seen"
    ids: list[str]


Record = Annotated[MetaRecord | MetaUpdateRecord | MessageRecord | SeenRecord, Field(discriminator="type")]
RECORD: TypeAdapter[MetaRecord | MetaUpdateRecord | MessageRecord | SeenRecord] = TypeAdapter(Record)


def parse_line(line: str) -> MetaRecord | MetaUpdateRecord | MessageRecord | SeenRecord:
    return RECORD.validate_json(line)


def dump_line(record: _Record) -> bytes:
    return (record.model_dump_json() + "\n").encode("utf-8")
