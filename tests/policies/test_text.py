"""Text shown to a person: control and invisible characters are refused where configured, escaped where shown."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, strategies as st

from policies.kernel.text import (
    cells,
    display_safe,
    display_safe_lines,
    first_hidden,
    one_line,
    visible,
    wrap_cells,
)

HOSTILE = [
    ("\x1b[2K", "\\x1b[2K"),  # erase the line: terminal control
    ("a\rb", "a\\rb"),  # back to column 0, overwrite
    ("pay\u202egnp.exe", "pay\\u202egnp.exe"),  # right-to-left override reorders what is read
    ("dev\u200bfriend", "dev\\u200bfriend"),  # zero-width space: two names that look the same
    ("x\u2028y", "x\\u2028y"),  # line separator
    ("\x7f\x85", "\\x7f\\x85"),  # DEL and the C1 next-line
    # letters and symbols that are drawn as nothing or as a blank
    ("dev\u3164friend", "dev\\u3164friend"),  # Hangul filler (Lo)
    ("\u115fx", "\\u115fx"),  # Hangul choseong filler (Lo)
    ("x\u1160", "x\\u1160"),  # Hangul jungseong filler (Lo)
    ("a\uffa0b", "a\\uffa0b"),  # halfwidth Hangul filler (Lo)
    ("a\u2800b", "a\\u2800b"),  # braille pattern blank (So)
    ("dev\u034ffriend", "dev\\u034ffriend"),  # combining grapheme joiner (Mn), even after a letter
    ("dev\ufe00friend", "dev\\ufe00friend"),  # variation selector 1 (Mn)
    ("a\U000e0100b", "a\\U000e0100b"),  # variation selector 17 (Mn): can smuggle bytes after any letter
    # a combining mark with nothing visible to sit on
    ("\ufe0fUSDC", "\\ufe0fUSDC"),  # at the start
    ("USDC \u0301", "USDC \\u0301"),  # after a space
    ("\u20ddx", "\\u20ddx"),  # an enclosing mark (Me) at the start
    ("a\u200b\u0301", "a\\u200b\\u0301"),  # after a hidden character, which is escaped
    ("dev\ufe0ffriend", "dev\\ufe0ffriend"),  # an emoji selector after a letter draws nothing
    ("\u2764\ufe0f\ufe0f", "\u2764\ufe0f\\ufe0f"),  # a second selector draws nothing either
    ("pay\U0001d159\U0001d159 Bob", "pay\\U0001d159\\U0001d159 Bob"),  # null notehead: drawn as a blank
    ("ab\U00016fe4c", "ab\\U00016fe4c"),  # Khitan filler: default-ignorable even after a letter
    ("x\u00bf\ufe0f", "x\u00bf\\ufe0f"),  # a selector after punctuation with no emoji form
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_hidden_characters_are_written_out(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert first_hidden(text) is not None
    with pytest.raises(ValueError, match=r"U\+[0-9A-F]{4}"):
        display_safe(text)


@pytest.mark.parametrize(
    "text",
    [
        "dev-friend",
        "Café 日本 ₿ 🦉",
        "USDC.e",
        "",
        "e\u0301",
        "Cafe\u0301 x",
        "\u2764\ufe0f",
        "1\ufe0f\u20e3",
        "\u203c\ufe0e ok",
        "a b",
        "dev\u00a0friend",
        "\u65e5\u672c\u3000\u8a9e",
        "10\u202f000 \u20ac",
    ],
)
def test_plain_text_is_left_alone(text: str) -> None:
    assert visible(text) == text
    assert display_safe(text) == text


def test_a_console_keeps_its_layout_characters() -> None:
    assert visible("a\nb\tc\x1b", keep="\n\t") == "a\nb\tc\\x1b"


def test_a_kept_layout_character_is_still_whitespace_for_a_mark_after_it() -> None:
    """Allowing the newline must not glue the mark after it onto the letter before it."""
    assert visible("a\n\u0301b", keep="\n") == "a\n\\u0301b"
    assert first_hidden("a\n\u0301b", keep="\n") == "\u0301"
    with pytest.raises(ValueError, match="U\\+0301"):
        display_safe_lines("a\n\u0301b")
    assert display_safe_lines("line one\n\tline two\n") == "line one\n\tline two\n"


def test_printable_ascii_stays_on_the_fast_path() -> None:
    text = "a reason of plain words, 0x00 and 1.5 ETH " * 40
    start = time.perf_counter()
    for _ in range(2000):
        display_safe(text)
        visible(text)
    assert time.perf_counter() - start < 0.5


INTERESTING = st.sampled_from(
    " \n\t\x1b\u00a0\u3000\u2007\u115f\u1160\u3164\uffa0\u2800\u034f\u0301\u20dd\ufe0e\ufe0f\ufe00\u200b\u202e"
    "\u2764\u2139\u00e9e1#\u180b\u17b4" + chr(0xE0100)
)
TEXT = st.text(alphabet=st.one_of(st.characters(), INTERESTING))


@given(TEXT)
def test_what_is_shown_holds_no_hidden_character(text: str) -> None:
    shown = visible(text)
    assert first_hidden(shown) is None
    assert display_safe(shown) == shown
    assert visible(shown) == shown
    if first_hidden(text) is None:
        assert shown == text


@given(TEXT, st.sampled_from(["\n", "\n\t", "\t"]))
def test_what_a_console_shows_holds_no_hidden_character_but_its_layout(text: str, keep: str) -> None:
    shown = visible(text, keep=keep)
    assert first_hidden(shown, keep=keep) is None
    assert display_safe(shown, keep=keep) == shown
    assert all(ch not in "\n\t" or ch in keep for ch in shown)


@given(st.text(alphabet=st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Mn", "Me"]), min_size=1))
def test_only_the_kept_characters_survive(text: str) -> None:
    shown = visible(text, keep="\n")
    assert all(ch == "\n" or (ch.isascii() and ch.isprintable()) for ch in shown)
    assert shown.count("\n") == text.count("\n")


def test_one_line_collapses_every_run_of_whitespace_and_caps_with_an_ellipsis() -> None:
    assert one_line("a \n\t b" + " " * 300 + "c", 10) == "a b c"
    assert one_line("x" * 20, 10) == "x" * 9 + "\u2026"


@given(
    st.text(alphabet=st.one_of(st.sampled_from("ab 日本\u0301\u2764\ufe0f"), st.characters()), max_size=300),
    st.integers(min_value=4, max_value=80),
)
def test_wrapped_rows_never_pass_the_width_in_terminal_cells(text: str, width: int) -> None:
    line = one_line(text, 1000)
    rows = wrap_cells(line, width)
    assert all(sum(cells(ch) for ch in row) <= width for row in rows)
    assert "".join(rows).replace(" ", "") == line.replace(" ", "")  # nothing lost
