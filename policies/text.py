"""Text that ends up in front of a person: no terminal controls, no invisible reordering.

Names from the policy, token symbols and the agent's stated reason are shown on the companion's
approval screen and on the console. A control character (ESC, CR, backspace) lets a string
rewrite lines the terminal already shows, such as the decoded recipient above it. A bidi override
or an invisible character changes what a person reads without changing the bytes. A security
prompt must show every character as what it is, so such text is refused where it is configured
and escaped where it is shown.
"""

from __future__ import annotations

import unicodedata

# Control (Cc), format (Cf: bidi overrides and isolates, zero-width characters), line and paragraph
# separators, surrogates, private use and unassigned code points.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def first_hidden(text: str) -> str | None:
    """The first character that would not show as itself, or None."""
    if text.isascii() and text.isprintable():
        return None
    return next((ch for ch in text if _hidden(ch)), None)


def visible(text: str, *, keep: str = "") -> str:
    """`text` with every hidden character written out as an escape (ESC becomes the 4 characters
    \\x1b), except those in `keep` (a console keeps its newlines)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if _hidden(ch) and ch not in keep else ch
                   for ch in text)


def display_safe(text: str, *, keep: str = "") -> str:
    """Pydantic validator: refuse text that would not show as itself (`keep`: allowed anyway)."""
    ch = first_hidden(text.translate({ord(k): None for k in keep}) if keep else text)
    if ch is not None:
        raise ValueError(f"holds the control or invisible character U+{ord(ch):04X}, which could disguise "
                         "what is shown to you; use plain text")
    return text


def display_safe_lines(text: str) -> str:
    """`display_safe` for multi-line text: newlines and tabs are layout, everything else must show."""
    return display_safe(text, keep="\n\t")
