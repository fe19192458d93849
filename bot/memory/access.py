"""Read and append memory notes by a model-supplied path, confined to the memory area.

The path comes from the model, which may be steered by untrusted content, so it is checked
lexically (relative, no `..`, `.md`) and then by real path, so a symlink cannot lead outside.
"""

from __future__ import annotations

import fcntl
import os
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath

from bot.memory.index import MEMORY_DIR, MEMORY_FILE
from policies.kernel.files import FILE_MODE, PathNotAllowed, ensure_private_dir, read_regular_text

DEFAULT_MAX_CHARS = 8_000
MAX_REMEMBER_CHARS = 10_000
_DAILY = re.compile(r"^memory/\d{4}-\d{2}-\d{2}\.md$")


@dataclass(frozen=True)
class NoteText:
    path: str
    start_line: int
    end_line: int
    text: str
    truncated: bool


def _check_relative(path: str) -> PurePosixPath:
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        raise PathNotAllowed("memory path must be a non-empty relative POSIX path")
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts:
        raise PathNotAllowed(f"memory path {path!r} must be relative and must not contain '..'")
    if rel.suffix != ".md":
        raise PathNotAllowed(f"memory path {path!r} is not a .md note")
    if rel.as_posix() != MEMORY_FILE and (len(rel.parts) < 2 or rel.parts[0] != MEMORY_DIR):
        raise PathNotAllowed(f"memory path {path!r} is outside MEMORY.md and memory/")
    return rel


def resolve_memory_path(workspace: Path, path: str) -> Path:
    """The note's path inside `workspace`, or PathNotAllowed; real path must stay in the memory area."""
    rel = _check_relative(path)
    root = Path(workspace)
    target = root / rel
    real_root = os.path.realpath(root)
    real_target = os.path.realpath(target)
    if rel.as_posix() == MEMORY_FILE:
        allowed = real_target == os.path.join(real_root, MEMORY_FILE)
    else:  # the area is <real workspace>/memory itself, so a symlinked memory/ dir does not count
        area = os.path.join(real_root, MEMORY_DIR)
        dir_ok = os.path.realpath(root / MEMORY_DIR) == area
        allowed = dir_ok and os.path.commonpath([real_target, area]) == area
    if not allowed:
        raise PathNotAllowed(f"memory path {path!r} resolves outside the memory area")
    return target


def memory_get(
    workspace: Path,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> NoteText:
    """Lines `start_line..end_line` (1-based, inclusive) of a note, cut at `max_chars`."""
    target = resolve_memory_path(workspace, path)
    lines = read_regular_text(target).splitlines()
    first = max(1, start_line or 1)
    last = min(len(lines), end_line if end_line is not None else len(lines))
    text = "\n".join(lines[first - 1 : last]) if last >= first else ""
    truncated = len(text) > max_chars
    return NoteText(
        path=path, start_line=first, end_line=max(last, first - 1), text=text[:max_chars], truncated=truncated
    )


def daily_note(day: date) -> str:
    return f"{MEMORY_DIR}/{day.isoformat()}.md"


def remember(workspace: Path, text: str, note: str = MEMORY_FILE) -> str:
    """Append `text` as its own paragraph to MEMORY.md or memory/YYYY-MM-DD.md; returns the note path."""
    if note != MEMORY_FILE and not _DAILY.match(note):
        raise PathNotAllowed(f"remember writes MEMORY.md or memory/YYYY-MM-DD.md, not {note!r}")
    body = text.strip()
    if not body:
        raise ValueError("nothing to remember")
    if len(body) > MAX_REMEMBER_CHARS:
        raise ValueError(f"memory entries are limited to {MAX_REMEMBER_CHARS} characters")
    root = Path(workspace)
    if note != MEMORY_FILE:
        ensure_private_dir(root / MEMORY_DIR)
    target = resolve_memory_path(root, note)
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        tail = os.pread(fd, 2, max(0, size - 2)) if size else b"\n\n"
        prefix = "" if tail.endswith(b"\n\n") else ("\n" if tail.endswith(b"\n") else "\n\n")
        os.write(fd, (prefix + body + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    return note
