"""Split a markdown note into search chunks with line ranges, so hits can cite exact lines.

Chunks follow the note's own structure (headings start a chunk, paragraphs are kept whole when
they fit) because a hit that cuts a paragraph in half is hard for the model to use.
"""

from __future__ import annotations

from dataclasses import dataclass

TARGET_CHARS = 800


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int  # inclusive
    text: str


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """Paragraph blocks as (start, end) 0-based inclusive; a heading always opens a new block."""
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            if start is not None:
                blocks.append((start, i - 1))
                start = None
            continue
        if line.lstrip().startswith("#") and start is not None:
            blocks.append((start, i - 1))
            start = None
        if start is None:
            start = i
    if start is not None:
        blocks.append((start, len(lines) - 1))
    return blocks


def _split_long(lines: list[str], start: int, end: int, target: int) -> list[tuple[int, int]]:
    """Break one oversized block at line boundaries (a single huge line stays whole)."""
    pieces: list[tuple[int, int]] = []
    piece_start, size = start, 0
    for i in range(start, end + 1):
        if size and size + len(lines[i]) + 1 > target:
            pieces.append((piece_start, i - 1))
            piece_start, size = i, 0
        size += len(lines[i]) + 1
    pieces.append((piece_start, end))
    return pieces


def chunk_markdown(text: str, target: int = TARGET_CHARS) -> list[Chunk]:
    """Group blocks into ~`target`-char chunks; headings start a chunk so sections stay together."""
    lines = text.splitlines()
    spans: list[tuple[int, int]] = []
    for start, end in _blocks(lines):
        spans.extend(_split_long(lines, start, end, target))
    chunks: list[Chunk] = []
    cur: tuple[int, int] | None = None
    size = 0
    for start, end in spans:
        span_size = sum(len(lines[i]) + 1 for i in range(start, end + 1))
        heading = lines[start].lstrip().startswith("#")
        if cur is not None and (heading or size + span_size > target):
            chunks.append(_make(lines, *cur))
            cur = None
        if cur is None:
            cur, size = (start, end), span_size
        else:
            cur, size = (cur[0], end), size + span_size
    if cur is not None:
        chunks.append(_make(lines, *cur))
    return chunks


def _make(lines: list[str], start: int, end: int) -> Chunk:
    return Chunk(start_line=start + 1, end_line=end + 1, text="\n".join(lines[start : end + 1]))
