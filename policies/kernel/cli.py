"""Helpers every command group shares (the bot's, the signer's, the companion's, the bridge's): the OwliaBot home,
JSON output, worded errors, the event loop, passphrases."""

from __future__ import annotations

import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer

from policies.kernel.home import resolve_home


def home_of(ctx: typer.Context) -> Path:
    root = ctx.find_root()
    return resolve_home(root.params.get("home") if root.params else None)


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def fail(message: str, code: int = 1) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    from policies.kernel.aio import (  # lazy: 19 ms, 6860 KiB
        run as run_loop,  # `owlia --help` should not pay for it
    )

    return run_loop(coro)


def read_passphrase(file: Path | None, *, confirm: bool = False) -> bytearray:
    from policies.kernel.passphrase import PassphraseError, read_passphrase as _read  # lazy: 5 ms, 4188 KiB

    try:
        return _read(file=file, prompt=sys.stdin.isatty(), confirm=confirm)
    except PassphraseError as exc:
        fail(str(exc))
