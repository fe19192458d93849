"""Text the bridge wrote, made safe to print on the companion's screen.

Escaping control characters is not enough: a bridge reply padded with spaces, or just long enough,
wraps on the terminal so that its tail starts a row of its own, where it can pass for one of ours
("settled: ... nothing to do"). So bridge text is collapsed to one line, capped, written out by
`visible`, and printed only under a label, wrapped by us to a width well inside a terminal (in
terminal cells, so wide characters count double), each row behind a gutter that none of the
companion's own rows start with.
"""

from __future__ import annotations

import re
from typing import Any

from policies.kernel.text import one_line, visible, wrap_cells

BRIDGE_CHARS = 200  # the most of one bridge-written text ever shown
WIDTH = 64  # wrapped rows of it, behind GUTTER: 70 columns in all
GUTTER = "    | "
_TX_HASH = re.compile(r"0x[0-9a-fA-F]{64}")


def short(text: Any, limit: int = BRIDGE_CHARS) -> str:
    """One collapsed, capped, escaped line: for inside a sentence of ours only when `limit` is small."""
    return visible(one_line(str(text), limit))


def block(label: str, text: Any, limit: int = BRIDGE_CHARS) -> list[str]:
    """`label:` then the text in gutter rows: however it is padded, it cannot start a row of its own."""
    rows = [row for row in wrap_cells(short(text, limit), WIDTH) if row] or ["(nothing)"]
    return [f"{label}:", *(GUTTER + row for row in rows)]


def tx_hash_or_blank(value: Any) -> str:
    """A transaction hash from a reply, shown only if it is one."""
    return value if isinstance(value, str) and _TX_HASH.fullmatch(value) else ""
