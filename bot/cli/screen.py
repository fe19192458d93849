"""The approval screen of `owlia skill` and `owlia mcp`: what third-party code may do, then what its
author wrote, then one question.

The screen comes in two parts. First this program's own rows, drawn only from fixed-form values
(names, levels, host names, numbers). Then everything the author wrote (descriptions, allowed
values, defaults, patterns, schemas), each row under a `|` gutter: whitespace collapsed, hidden
characters escaped with `visible()`, and wrapped here, narrower than the terminal, counting wide
characters as two columns. A row the terminal wrapped itself would start at column 0 without the
gutter and could pose as a line of this screen; a row wrapped here cannot.

Text the model will read is never cut: what is approved is what was shown, every character of it (a
screen taller than the terminal goes through the pager). What would be too long to read is refused
where it is declared (the skill manifest's limits, `bot.mcp_servers.store.unshowable`). Only text the
model never reads (a tool name that is never offered) may be cut, with a note saying so.
"""

from __future__ import annotations

import shutil

import typer

from policies.kernel.cli import fail
from policies.kernel.text import visible, wrap_cells

SCREEN_WIDTH = 100
"""The widest the approval screen is drawn; narrower on a narrower terminal."""
DEFAULT_WIDTH = 79
"""Without a terminal to ask: fits the 80 columns every terminal has."""
MIN_WIDTH = 30
GUTTER = "| "


def screen_width() -> int:
    """One column less than the terminal (some wrap on writing the last column), within 30-100."""
    columns = shutil.get_terminal_size((80, 24)).columns
    return max(MIN_WIDTH, min(SCREEN_WIDTH, columns - 1))


def plain_rows(text: str, width: int, lead: str = "") -> list[str]:
    """A line of the screen's own (fixed-form values only) after `lead`, further rows indented more."""
    indent = lead + "    "
    first, *rest = wrap_cells(text, width - len(lead), width - len(indent))
    return [lead + first, *(indent + row for row in rest)]


def author_rows(
    text: str, indent: str, width: int, *, limit: int | None = None, where: str = "SKILL.md"
) -> list[str]:
    """Text the author wrote, as rows under the gutter: runs of whitespace collapsed to one space within
    each line, empty lines dropped, hidden characters escaped, wrapped; all of it. `limit` (only for
    text the model never reads) cuts it to that many characters, then an ellipsis and a note outside
    the gutter naming `where` the rest is."""
    lines = [line for line in (" ".join(raw.split()) for raw in text.split("\n")) if line]
    flat = "\n".join(lines)
    shown = flat if limit is None else flat[:limit]
    omitted = len(flat) - len(shown)
    if omitted:
        shown = shown.rstrip() + "\u2026"
    prefix = indent + GUTTER
    rows = [
        prefix + row
        for line in visible(shown, keep="\n").split("\n")
        if line
        for row in wrap_cells(line, width - len(prefix))
    ]
    if omitted:
        rows += plain_rows(f"(cut: {omitted} more characters; see {where})", width, indent)
    return rows


def authors_part(author: str, width: int) -> list[str]:
    """The line that opens the second part: who wrote what follows, and that it may lie."""
    return ["", *plain_rows(f"Written by {author}, after each |: the model reads it; it may lie.", width)]


def show(text: str) -> None:
    """Print screen text (it holds author-written parts): every hidden character escaped, newlines kept.
    On a terminal, a screen taller than it goes through the pager ($PAGER, else `less`), so no row
    scrolls away unread before the question; elsewhere (a pipe, a test) it is printed whole."""
    import sys  # lazy: 6 ms, 996 KiB (2 imports)

    import click

    shown = visible(text, keep="\n")
    rows = shown.count("\n") + 1
    if sys.stdin.isatty() and sys.stdout.isatty() and rows > shutil.get_terminal_size((80, 24)).lines - 2:
        click.echo_via_pager(shown)
    else:
        typer.echo(shown)


def ask(question: str, *, yes: bool, refusal: str) -> None:
    """The one question after the screen; `--yes` answers it. Anything but yes stops with `refusal`."""
    if not yes and not typer.confirm(question, default=False):
        fail(refusal)
