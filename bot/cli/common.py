"""Helpers every command group shares: the home directory, config, JSON output, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer


def home_of(ctx: typer.Context) -> Path:
    from signer.settings import resolve_home

    root = ctx.find_root()
    return resolve_home(root.params.get("home") if root.params else None)


def signer_config(ctx: typer.Context):
    from signer.settings import ConfigError, load_signer_config

    try:
        return load_signer_config(home_of(ctx))
    except ConfigError as exc:
        fail(str(exc))


def signer_paths(ctx: typer.Context):
    from signer.paths import SignerPaths  # not signer.daemon: commands that only talk to it stay light

    return SignerPaths.from_config(home_of(ctx), signer_config(ctx))


def client_token_file(ctx: typer.Context) -> Path:
    return home_of(ctx) / "secrets" / "signer.token"


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True))


def fail(message: str, code: int = 1) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def run(coro: Any) -> Any:
    from signer.aio import run as run_loop  # lazily: `owlia --help` should not pay for it

    return run_loop(coro)


def read_passphrase(file: Path | None, *, confirm: bool = False) -> bytearray:
    from signer.keystore import KeystoreError
    from signer.keystore import read_passphrase as _read

    try:
        return _read(file=file, prompt=sys.stdin.isatty(), confirm=confirm)
    except KeystoreError as exc:
        fail(str(exc))


def signer_call(ctx: typer.Context, method: str, params: dict[str, Any] | None = None, *, admin: bool = False) -> Any:
    """One call to the running signer, as the local admin or as this home's client."""
    from signer.client import SignerClient, SignerError, load_token

    paths = signer_paths(ctx)
    try:
        if admin:
            if not paths.admin_token.exists():
                fail(f"no admin token at {paths.admin_token}: run as the signer's user after `owlia signer init`")
            token = paths.admin_token.read_text().strip()
        else:
            token = load_token(client_token_file(ctx))
    except PermissionError:
        fail(f"cannot read the admin token in {paths.home}: run this as the signer's user")
    except SignerError as exc:
        fail(exc.message)

    async def call() -> Any:
        async with SignerClient(paths.socket, token) as client:
            return await client.call(method, params)

    try:
        return run(call())
    except SignerError as exc:
        fail(exc.message)
