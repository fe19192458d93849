"""The SSE decoder: the standard's framing rules, any chunking, and its limits (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from bot.llm.sse import SSEDecoder, SSEError, SSEEvent, SSELimits

LINE_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=40)
NAMES = st.text(
    st.characters(whitelist_categories=("Ll", "Lu"), whitelist_characters="_"), min_size=1, max_size=12
)


def decode(chunks: list[bytes], limits: SSELimits = SSELimits()) -> list[SSEEvent]:
    decoder = SSEDecoder(limits)
    return [event for chunk in chunks for event in decoder.feed(chunk)]


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[SSEEvent]]:
    """A valid stream (one line-end style, comments, multi-line data, ignored fields) and its events."""
    eol = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    lines: list[str] = []
    expected: list[SSEEvent] = []
    for _ in range(draw(st.integers(0, 6))):
        name = draw(st.none() | NAMES)
        data = draw(st.lists(LINE_TEXT, min_size=1, max_size=4))
        if draw(st.booleans()):
            lines.append(": keep-alive " + draw(LINE_TEXT))
        if name is not None:
            lines.append(f"event: {name}")
        if draw(st.booleans()):
            lines.append("id: 7")
        lines += [
            f"data: {part}" if draw(st.booleans()) or part[:1] == " " else f"data:{part}" for part in data
        ]
        lines.append("")
        expected.append(SSEEvent(name or "message", "\n".join(data)))
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return bom + b"".join(line.encode() + eol for line in lines), expected


@settings(max_examples=300, deadline=None)
@given(streams(), st.lists(st.integers(0, 2000), max_size=12))
def test_any_chunking_of_a_valid_stream_gives_the_same_events(stream, cuts):
    data, expected = stream
    assert decode([data]) == expected
    assert decode(split(data, cuts)) == expected


@settings(max_examples=100, deadline=None)
@given(streams())
def test_byte_at_a_time_gives_the_same_events(stream):
    data, expected = stream
    assert decode([data[i : i + 1] for i in range(len(data))]) == expected


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.lists(st.integers(0, 400), max_size=8))
def test_a_line_over_the_limit_is_refused_however_it_arrives(length, cuts):
    limits = SSELimits(max_line=100, max_event=10_000, max_total=10_000)
    data = b"data: " + b"x" * length + b"\n\n"
    line = len(data) - 2
    if line > 100:
        with pytest.raises(SSEError, match="line .* longer than 100 bytes"):
            decode(split(data, cuts), limits)
    else:
        assert decode(split(data, cuts), limits) == [SSEEvent("message", "x" * length)]


def test_a_line_without_end_is_refused_before_it_is_all_buffered():
    decoder = SSEDecoder(SSELimits(max_line=1000))
    decoder.feed(b"data: " + b"x" * 900)
    with pytest.raises(SSEError, match="longer than 1000"):
        decoder.feed(b"x" * 200)  # no line end yet: refused now, not when the peer finally ends it


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40))
def test_an_event_over_the_limit_is_refused(lines):
    limits = SSELimits(max_line=100, max_event=200, max_total=100_000)
    data = b"data: 0123456789\n" * lines + b"\n"  # 16 bytes of data line each
    if lines * 16 > 200:
        with pytest.raises(SSEError, match="event .* larger than 200"):
            decode([data], limits)
    else:
        assert len(decode([data], limits)) == 1


def test_the_whole_stream_has_a_limit_even_made_of_small_events():
    limits = SSELimits(max_total=1000)
    with pytest.raises(SSEError, match="larger than 1000 bytes"):
        decode([b"data: {}\n\n"] * 200, limits)


def test_text_that_is_not_utf8_is_refused():
    with pytest.raises(SSEError, match="not UTF-8"):
        decode([b"data: \xff\xfe\n\n"])


def test_rules_of_the_standard():
    stream = (
        b"event: a\ndata\ndata:x\n\n"  # a field without a colon has an empty value
        b"data: one\nretry: 10\nunknown: y\n\n"  # unknown fields are ignored
        b"event: only-a-name\n\n"  # no data: nothing dispatched, and the name does not leak on
        b"data: tail"
    )  # never closed by a blank line: dropped
    assert decode([stream]) == [SSEEvent("a", "\nx"), SSEEvent("message", "one")]
