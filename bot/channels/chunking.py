"""Split a reply into messages a chat platform accepts (Telegram 4096 chars, Discord 2000).

Splits prefer line boundaries, then spaces, then a hard cut. A fenced code block that has to be
split is closed at the end of one chunk and reopened, with its language tag, at the start of the
next, so no chunk ever renders half a code block as prose (or prose as code).
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^\s*(`{3,}|~{3,})(\S*)")


def _cut(text: str, room: int) -> int:
    """Where to end a piece of `text` at most `room` chars long: after a newline, a space, or hard."""
    if len(text) <= room:
        return len(text)
    newline = text.rfind("\n", 0, room)
    if newline >= room // 2:
        return newline + 1
    space = text.rfind(" ", 0, room)
    if space >= room // 2:
        return space + 1
    return room


def split_message(text: str, limit: int) -> list[str]:
    if limit < 16:
        raise ValueError("limit too small to hold a code fence")
    chunks: list[str] = []
    current = ""
    reopened = 0  # length of the fence this chunk starts with because the previous one closed it
    fence: tuple[str, str] | None = None  # (marker, language) of the open code block

    def has_content() -> bool:
        return bool(current[reopened:].strip())

    def close_and_flush() -> None:
        nonlocal current, reopened
        body = current
        if fence is not None:
            body = body + ("" if body.endswith("\n") else "\n") + fence[0]
        if has_content():
            chunks.append(body.rstrip("\n"))
        current = f"{fence[0]}{fence[1]}\n" if fence is not None else ""
        reopened = len(current)

    for line in text.splitlines(keepends=True):
        reserve = (len(fence[0]) + 1) if fence is not None else 0
        match = FENCE.match(line)
        # A line that opens a block must leave room in this chunk to close it again.
        opening_reserve = len(match.group(1)) + 1 if match and fence is None else 0
        while line:
            room = limit - len(current) - max(reserve, opening_reserve)
            if len(line) <= room:
                current += line
                break
            if has_content():
                close_and_flush()
                continue
            cut = _cut(line, max(room, 1))
            current += line[:cut]
            line = line[cut:]
            if line:
                close_and_flush()
        if match:
            marker, language = match.group(1), match.group(2)
            if fence is None:
                fence = (marker, language)
            elif marker.startswith(fence[0][0]) and len(marker) >= len(fence[0]) and not language:
                fence = None
    if has_content():
        chunks.append(current.rstrip("\n"))
    return chunks
