"""How a command finds and calls the signer: its config, its home's layout, one call as client or admin.

The bot's, the companion's, the bridge's and the signer's own commands all use this; it opens the
signer's socket with the wire client and reads nothing but the config file and the token files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from policies.kernel.cli import fail, home_of, run

if TYPE_CHECKING:  # the command tree stays light: pydantic and yaml load when a command runs
    from signer.wire.settings import SignerConfig, SignerPaths


def signer_config(ctx: typer.Context) -> SignerConfig:
    from signer.wire.settings import ConfigError, load_signer_config

    try:
        return load_signer_config(home_of(ctx))
    except ConfigError as exc:
        fail(str(exc))


def signer_paths(ctx: typer.Context) -> SignerPaths:
    from signer.wire.settings import SignerPaths

    return SignerPaths.from_config(home_of(ctx), signer_config(ctx))


def client_token_file(ctx: typer.Context) -> Path:
    return home_of(ctx) / "secrets" / "signer.token"


def signer_call(ctx: typer.Context, method: str, params: dict[str, Any] | None = None, *, admin: bool = False) -> Any:
    """One call to the running signer, as the local admin or as this home's client."""
    from signer.wire.client import SignerClient, SignerError, load_token

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
