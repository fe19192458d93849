"""Text shown to a person: control and invisible characters are refused where configured, escaped where shown."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.text import display_safe, first_hidden, visible

HOSTILE = [
    ("\x1b[2K", "\\x1b[2K"),  # erase the line: terminal control
    ("a\rb", "a\\rb"),  # back to column 0, overwrite
    ("pay\u202egnp.exe", "pay\\u202egnp.exe"),  # right-to-left override reorders what is read
    ("dev\u200bfriend", "dev\\u200bfriend"),  # zero-width space: two names that look the same
    ("x\u2028y", "x\\u2028y"),  # line separator
    ("\x7f\x85", "\\x7f\\x85"),  # DEL and the C1 next-line
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_hidden_characters_are_written_out(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert first_hidden(text) is not None
    with pytest.raises(ValueError, match=r"U\+[0-9A-F]{4}"):
        display_safe(text)


@pytest.mark.parametrize("text", ["dev-friend", "Café 日本 ₿ 🦉", "USDC.e", ""])
def test_plain_text_is_left_alone(text: str) -> None:
    assert visible(text) == text
    assert display_safe(text) == text


def test_a_console_keeps_its_layout_characters() -> None:
    assert visible("a\nb\tc\x1b", keep="\n\t") == "a\nb\tc\\x1b"


@given(st.text())
def test_what_is_shown_holds_no_hidden_character(text: str) -> None:
    shown = visible(text)
    assert first_hidden(shown) is None
    assert display_safe(shown) == shown
    hidden = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}
    if not any(unicodedata.category(ch) in hidden for ch in text):
        assert shown == text


@given(st.text(alphabet=st.characters(categories=["Cc", "Cf", "Zl", "Zp"]), min_size=1))
def test_only_the_kept_characters_survive(text: str) -> None:
    shown = visible(text, keep="\n")
    assert all(ch == "\n" or (ch.isascii() and ch.isprintable()) for ch in shown)
    assert shown.count("\n") == text.count("\n")
