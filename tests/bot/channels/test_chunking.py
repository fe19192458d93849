"""Reply splitting: every chunk fits, nothing is lost, code blocks never straddle chunks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from bot.channels.chunking import FENCE, split_message


def ends_open(chunk: str) -> bool:
    """CommonMark's rule: a closing fence uses the opener's character, is at least as long, has no info."""
    opener = None
    for line in chunk.splitlines():
        match = FENCE.match(line)
        if not match:
            continue
        marker, info = match.groups()
        if opener is None:
            opener = marker
        elif marker[0] == opener[0] and len(marker) >= len(opener) and not info:
            opener = None
    return opener is not None


def words(text: str) -> list[str]:
    return [w for w in re.split(r"\s+", text) if w and not re.fullmatch(r"(`{3,}|~{3,})\w*", w)]


def test_short_text_is_one_chunk() -> None:
    assert split_message("hello\nworld", 4096) == ["hello\nworld"]


def test_splits_on_line_boundaries() -> None:
    lines = [f"line {i:03d} " + "x" * 40 for i in range(100)]
    chunks = split_message("\n".join(lines), 500)
    assert all(len(c) <= 500 for c in chunks)
    assert "\n".join(chunks).splitlines() == lines  # no line was cut


def test_code_block_is_closed_and_reopened_with_its_language() -> None:
    body = "\n".join(f"print({i})" for i in range(200))
    text = f"Here:\n```python\n{body}\n```\nDone."
    chunks = split_message(text, 300)
    assert len(chunks) > 2
    for chunk in chunks:
        assert len(chunk) <= 300
        assert not ends_open(chunk), chunk
    assert all(c.startswith("```python") for c in chunks[1:-1])
    assert words("\n".join(chunks)) == words(text)


def test_a_single_huge_word_is_cut_hard() -> None:
    chunks = split_message("a" * 1000, 300)
    assert [len(c) for c in chunks] == [300, 300, 300, 100]


def test_limit_below_a_fence_is_refused() -> None:
    with pytest.raises(ValueError):
        split_message("x", 8)


line = st.one_of(st.text(alphabet="abc xyz\t", max_size=120), st.sampled_from(["```", "```py", "~~~", ""]))


@settings(max_examples=300, deadline=None)
@given(st.lists(line, max_size=60), st.integers(min_value=40, max_value=400))
def test_chunks_fit_lose_nothing_and_keep_fences_balanced(lines: list[str], limit: int) -> None:
    text = "\n".join(lines)
    chunks = split_message(text, limit)
    assert all(len(c) <= limit for c in chunks)
    assert words("\n".join(chunks)) == words(text)
    opened = ends_open(text)  # input with an unclosed block may end with one
    for chunk in chunks[:-1] if opened else chunks:
        assert not ends_open(chunk), (chunk, limit)
