"""Lines on stderr as click's `secho(..., err=True)` prints them, without loading typer or click: for
the command lines that go around the typer app (bot/cli/entry.py: `owlia start`, `owlia sign send`).

click colours a line only on a terminal (`\\x1b[31m...\\x1b[0m`) and writes nothing when the process
was started with stderr closed; tests/bot/test_cli_sign_send.py holds the bytes equal to the typer
command's on a terminal and off one.
"""

from __future__ import annotations

import sys

RED, YELLOW = "31", "33"


def say(text: str, colour: str | None = None) -> None:
    """One line on stderr, in `colour` (an ANSI code) on a terminal."""
    stream = sys.stderr
    if stream is None:  # started with that descriptor closed: click's echo writes nothing either
        return
    if colour is not None and stream.isatty():
        text = f"\x1b[{colour}m{text}\x1b[0m"
    stream.write(text + "\n")
    stream.flush()


def error(message: str) -> None:
    """`error: MESSAGE` in red, exactly as policies.kernel.cli.fail prints it for the typer commands."""
    say(f"error: {message}", RED)
