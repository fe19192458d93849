"""Memory tools: search, read and list the workspace's notes, and append to them with confirmation.

The notes are the bot's own, but they quote web pages, messages and the model's summaries of
them, so everything read back is marked untrusted. Paths come from the model and go through
bot.memory's confinement (MEMORY.md and memory/ only, real paths checked).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone

from pydantic import Field, field_validator, model_validator

from bot.memory import MemoryIndex, memory_files, memory_get as read_note, remember as append_note
from bot.memory.index import MEMORY_FILE
from bot.tools.base import Level, NoArgs, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from policies.kernel.files import PathNotAllowed
from policies.kernel.text import display_safe_lines

MAX_REMEMBER = 4000
MAX_LISTED = 200
_DAILY = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})\.md$")


def _index(ctx: ToolContext) -> MemoryIndex:
    if ctx.services.memory is None:
        raise ToolFailure("memory search is not configured")
    return ctx.services.memory


class MemorySearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=500)
    limit: int = Field(default=5, ge=1, le=20)


@tool(
    "memory_search",
    Level.READ,
    MemorySearchArgs,
    description="""
Search the memory notes (MEMORY.md and memory/*.md). Returns path, line range and a snippet per
hit; read more with memory_get.""",
)
async def memory_search(ctx: ToolContext, args: MemorySearchArgs) -> ToolOutput:
    index = _index(ctx)
    index.reindex()  # incremental: only changed notes are re-read
    hits = index.search(args.query, limit=args.limit)
    if not hits:
        return ToolOutput(f"No memory notes match {args.query!r}.", untrusted=True, data={"hits": []})
    lines = [f"{h.path}:{h.start_line}-{h.end_line}  {' '.join(h.snippet.split())}" for h in hits]
    data = {"hits": [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line} for h in hits]}
    return ToolOutput("\n".join(lines), untrusted=True, data=data)


class MemoryGetArgs(ToolArgs):
    path: str = Field(min_length=1, max_length=200, description="MEMORY.md or memory/....md")
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> MemoryGetArgs:
        if self.start_line is not None and self.end_line is not None and self.end_line < self.start_line:
            raise ValueError("end_line must not be before start_line")
        return self


@tool(
    "memory_get",
    Level.READ,
    MemoryGetArgs,
    description="""
Read lines of one memory note (MEMORY.md or a file under memory/), 1-based and inclusive.""",
)
async def memory_get(ctx: ToolContext, args: MemoryGetArgs) -> ToolOutput:
    try:
        note = read_note(ctx.services.workspace, args.path, args.start_line, args.end_line)
    except PathNotAllowed as exc:
        raise ToolFailure(str(exc)) from None
    except FileNotFoundError:
        raise ToolFailure(f"there is no note at {args.path}") from None
    cut = " (cut short)" if note.truncated else ""
    header = f"{note.path} lines {note.start_line}-{note.end_line}{cut}"
    return ToolOutput(
        f"{header}\n{note.text}",
        untrusted=True,
        data={
            "path": note.path,
            "start_line": note.start_line,
            "end_line": note.end_line,
            "truncated": note.truncated,
        },
    )


@tool("list_notes", Level.READ, NoArgs, description="List the memory notes with their size and last change.")
async def list_notes(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    files = memory_files(ctx.services.workspace)
    if not files:
        return ToolOutput("There are no memory notes yet.", untrusted=True, data={"notes": []})
    lines = []
    for rel, path in list(files.items())[:MAX_LISTED]:
        info = path.stat()
        changed = datetime.fromtimestamp(info.st_mtime, timezone.utc)
        lines.append(f"{rel}  {info.st_size} bytes  changed {changed:%Y-%m-%d %H:%M} UTC")
    if len(files) > MAX_LISTED:
        lines.append(f"... and {len(files) - MAX_LISTED} more (use memory_search)")
    return ToolOutput("\n".join(lines), untrusted=True, data={"notes": list(files)[:MAX_LISTED]})


class RememberArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=MAX_REMEMBER)
    note: str | None = Field(
        default=None, description='"MEMORY.md" (default) or a day note "memory/YYYY-MM-DD.md"'
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("nothing to remember")
        return display_safe_lines(value)  # MEMORY.md goes into every prompt: what you confirm is all there is

    @field_validator("note")
    @classmethod
    def _note(cls, value: str | None) -> str | None:
        if value is None or value == MEMORY_FILE:
            return value
        match = _DAILY.fullmatch(value)
        if match is None:
            raise ValueError('note must be "MEMORY.md" or "memory/YYYY-MM-DD.md"')
        date.fromisoformat(match.group(1))  # a real calendar day, not 2026-13-45
        return value


def _confirm_remember(args: RememberArgs) -> str:
    return f"Append to {args.note or MEMORY_FILE}:\n---\n{args.text.strip()}\n---"


@tool(
    "remember",
    Level.WRITE,
    RememberArgs,
    confirmation=_confirm_remember,
    description="""
Append a paragraph to long-term memory (MEMORY.md, or a day note memory/YYYY-MM-DD.md) after the
user confirms the exact text. Never store secrets, keys or seed phrases.""",
)
async def remember(ctx: ToolContext, args: RememberArgs) -> ToolOutput:
    try:
        note = append_note(ctx.services.workspace, args.text, args.note or MEMORY_FILE)
    except PathNotAllowed as exc:
        raise ToolFailure(str(exc)) from None
    except ValueError as exc:
        raise ToolFailure(f"not saved: {exc}") from None
    return ToolOutput(f"Saved to {note}.", untrusted=False, data={"note": note})


MEMORY_TOOLS = (memory_search, memory_get, list_notes, remember)
