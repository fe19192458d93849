"""Which option values typer's converter passes through unchanged: plain text, small integers, paths.

Typer converts each option's value with pydantic; for these values its result is known without it
(the text itself, `int(text)`, `Path(text)`). `bot.cli.values` gives typer's own options a converter
built on these checks, and `owlia sign send`'s typer-free path (bot/cli/sign_send.py) takes a value
only when they pass: anything else goes to typer, so results and error messages stay typer's. No
typer or pydantic is imported here.
"""

from __future__ import annotations

import os

MAX_PLAIN_DIGITS = 18  # longer numbers, spaces and underscores go to pydantic, which takes some of them


def utf8(text: str) -> bool:
    """pydantic refuses a string it cannot encode (a lone surrogate from undecodable argv bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def plain_int(text: str) -> bool:
    digits = text[1:] if text[:1] in ("+", "-") else text
    return 0 < len(digits) <= MAX_PLAIN_DIGITS and digits.isascii() and digits.isdigit()


def plain_path(text: str) -> bool:
    """Text that typer turns into `Path(text)` for a path option with typer's defaults (need not exist,
    file or directory, must be readable if it does exist): otherwise typer words an error."""
    if not text or "\0" in text or not utf8(text):
        return False
    try:
        os.stat(text)
    except (OSError, ValueError):
        return True  # typer's check passes a path that does not exist
    return os.access(text, os.R_OK)
