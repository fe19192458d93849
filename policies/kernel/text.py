"""Text that ends up in front of a person: no terminal controls, no invisible reordering.

Names from the policy, token symbols and the agent's stated reason are shown on the companion's
approval screen and on the console. A control character (ESC, CR, backspace) lets a string
rewrite lines the terminal already shows, such as the decoded recipient above it. A bidi override
or an invisible character changes what a person reads without changing the bytes. A security
prompt must show every character as what it is, so such text is refused where it is configured
and escaped where it is shown.

Invisible is wider than the control and format categories: letters and symbols that render as
nothing or as a blank (Hangul fillers, the braille blank, the combining grapheme joiner, variation
selectors), and a combining mark with nothing visible to sit on (at the start or after a space it
draws over the blank, or not at all). Spaces other than U+0020 are shown as they are: a no-break or
ideographic space shows as a space (Chinese and Japanese text is full of U+3000); where a run of
spaces could pad a line to the terminal's edge, the screen collapses whitespace itself.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

# Control (Cc), format (Cf: bidi overrides and isolates, zero-width characters), line and paragraph
# separators, surrogates, private use and unassigned code points.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_MARKS = frozenset({"Mn", "Me"})
_EMOJI_SELECTORS = frozenset("\ufe0e\ufe0f")
"""Text/emoji presentation selectors: shown (they pick how the emoji before them is drawn) only right
after a character that can be an emoji; after a letter they are invisible (`dev` U+FE0F `friend` reads as devfriend)."""
_KEYCAPS = frozenset("#*0123456789")
_EMOJI_CATEGORIES = frozenset({"So", "Sm", "Sk"})
_EMOJI_PUNCTUATION = frozenset("\u203c\u2049\u3030\u303d")  # the only punctuation with an emoji form
_BLANKS = frozenset(
    "\u034f"  # combining grapheme joiner (Mn, default-ignorable: never drawn)
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers (Lo, but drawn as nothing or as a blank)
    "\u17b4\u17b5"  # Khmer inherent vowels (Mn, default-ignorable)
    "\u180b\u180c\u180d\u180f"  # Mongolian free variation selectors (Mn, default-ignorable)
    "\u2800"  # braille pattern blank (So, drawn as a blank)
    "\U00016fe4"  # Khitan small script filler (Mn, default-ignorable)
    "\U0001d159"  # musical symbol null notehead (So, drawn as a blank)
    + "".join(map(chr, range(0xFE00, 0xFE0E)))  # variation selectors 1-14 (Mn, default-ignorable)
    + "".join(map(chr, range(0xE0100, 0xE01F0)))  # variation selectors 17-256 (can carry hidden bytes)
)
"""Not in a hidden category, yet never shown as themselves, wherever they stand."""


def _alone_hidden(ch: str, category: str) -> bool:
    return category in _HIDDEN_CATEGORIES or ch in _BLANKS


def _emoji_base(ch: str) -> bool:
    if ch in _KEYCAPS or ch in _EMOJI_PUNCTUATION:
        return True
    return not ch.isascii() and unicodedata.category(ch) in _EMOJI_CATEGORIES


def _hidden_flags(text: str, keep: str) -> Iterator[tuple[str, bool]]:
    """Each character with whether it is hidden. Context matters for combining marks only: one that
    follows a visible character is part of it (é as e + U+0301); at the start, after whitespace or
    after a hidden character it draws on nothing visible, so it is hidden too."""
    base: str | None = None  # the visible character a following mark sits on; None: nothing to sit on
    after_mark = False  # a visible mark already sits on `base`
    for ch in text:
        if ch in keep:
            base, after_mark = None, False
            yield ch, False
            continue
        category = unicodedata.category(ch)
        if ch in _EMOJI_SELECTORS:
            hidden = base is None or after_mark or not _emoji_base(base)
        elif category in _MARKS:
            hidden = base is None or ch in _BLANKS
        else:
            hidden = _alone_hidden(ch, category)
        if hidden:
            base, after_mark = None, False
        elif category in _MARKS:
            after_mark = True
        else:
            base, after_mark = (None if ch.isspace() else ch), False
        yield ch, hidden


def _plain(text: str) -> bool:
    """The fast path: printable ASCII has nothing hidden in it (U+0020 is the one space allowed)."""
    return text.isascii() and text.isprintable()


def first_hidden(text: str, *, keep: str = "") -> str | None:
    """The first character that would not show as itself (`keep`: allowed anyway), or None."""
    if _plain(text):
        return None
    return next((ch for ch, hidden in _hidden_flags(text, keep) if hidden), None)


def visible(text: str, *, keep: str = "") -> str:
    """`text` with every hidden character written out as an escape (ESC becomes the 4 characters
    \\x1b), except those in `keep` (a console keeps its newlines). The result never holds a hidden
    character: an escape is plain ASCII, and a mark is kept only on a character that is kept too."""
    if _plain(text):
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if hidden else ch
        for ch, hidden in _hidden_flags(text, keep)
    )


def display_safe(text: str, *, keep: str = "") -> str:
    """Pydantic validator: refuse text that would not show as itself (`keep`: allowed anyway)."""
    ch = first_hidden(text, keep=keep)
    if ch is not None:
        raise ValueError(
            f"holds the control or invisible character U+{ord(ch):04X}, which could disguise "
            "what is shown to you; use plain text"
        )
    return text


def display_safe_lines(text: str) -> str:
    """`display_safe` for multi-line text: newlines and tabs are layout, everything else must show."""
    return display_safe(text, keep="\n\t")


# ---- text laid out on a terminal ------------------------------------------------------------------

_WIDE = frozenset({"W", "F", "A"})


def one_line(text: str, limit: int) -> str:
    """`text` on one line: every run of whitespace (newlines too) one space, at most `limit`
    characters (the last an ellipsis). Padding cannot push a tail onto a row of its own."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def cells(ch: str) -> int:
    """Terminal cells `ch` may take, never fewer: wide, fullwidth and ambiguous characters take two
    (an East Asian terminal draws the ambiguous ones wide), so do symbols (many are drawn as emoji), and
    an emoji selector may widen the character before it; other combining marks take none. Counting
    too many only wraps a row earlier."""
    if ch.isascii():
        return 1
    if ch in "\ufe0e\ufe0f":
        return 1
    category = unicodedata.category(ch)
    if category in ("Mn", "Me"):
        return 0
    return 2 if category.startswith("S") or unicodedata.east_asian_width(ch) in _WIDE else 1


def wrap_cells(line: str, width: int, rest: int | None = None) -> list[str]:
    """`line` (single spaces, no newline) in rows of at most `width` cells (`rest` for all but the
    first): at spaces where it can, inside a word longer than a row where it must (never right
    before a combining mark). We wrap, so the terminal never does: a row it wrapped would start at
    column 0, where it could pose as a line of the screen's own."""
    rows: list[str] = []
    row, used = "", 0

    def room() -> int:
        return width if not rows or rest is None else rest

    for word in line.split(" "):
        size = sum(cells(ch) for ch in word)
        if row and used + 1 + size <= room():
            row, used = f"{row} {word}", used + 1 + size
            continue
        if row:
            rows.append(row)
            row, used = "", 0
        for ch in word:
            size = cells(ch)
            if row and size and used + size > room():
                rows.append(row)
                row, used = "", 0
            row, used = row + ch, used + size
    return [*rows, row] if row or not rows else rows
