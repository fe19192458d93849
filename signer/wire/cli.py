"""How a command finds and calls the signer: its config, its home's layout, one call as client or admin.

The bot's, the companion's, the bridge's and the signer's own commands all use this; it opens the
signer's socket with the wire client and reads nothing but the config file and the token files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from policies.kernel.cli import fail, home_of, print_json, run

if TYPE_CHECKING:  # the command tree stays light: pydantic and yaml load when a command runs
    from signer.wire.settings import SignerConfig, SignerPaths
    from signer.wire.sign_replies import Reply

__all__ = [
    "client_token_file",
    "print_reply",
    "signer_call",
    "signer_call_as",
    "signer_call_if_up",
    "signer_config",
    "signer_paths",
]

R = TypeVar("R", bound="Reply")


def signer_config(ctx: typer.Context) -> SignerConfig:
    from signer.wire.settings import ConfigError, load_signer_config  # lazy: 66 ms, 8940 KiB

    try:
        return load_signer_config(home_of(ctx))
    except ConfigError as exc:
        fail(str(exc))


def signer_paths(ctx: typer.Context) -> SignerPaths:
    from signer.wire.settings import SignerPaths  # lazy: 66 ms, 8952 KiB

    return SignerPaths.from_config(home_of(ctx), signer_config(ctx))


def client_token_file(ctx: typer.Context) -> Path:
    from signer.wire.settings import client_token_file  # lazy: 66 ms, 8920 KiB

    return client_token_file(home_of(ctx))


def signer_call(
    ctx: typer.Context, method: str, params: dict[str, Any] | None = None, *, admin: bool = False
) -> Reply:
    """One call to the running signer, as the local admin or as this home's client: its typed reply."""
    reply = _signer_call(ctx, method, params, admin=admin, down_ok=False)
    assert reply is not None
    return reply


def signer_call_if_up(
    ctx: typer.Context,
    model: type[R],
    method: str,
    params: dict[str, Any] | None = None,
    *,
    admin: bool = False,
) -> R | None:
    """`signer_call_as`, but None when the signer cannot be reached (down, or its home is gone): for the
    companion's acts that hold without the signer, such as `owlia wallet revoke` after a host theft."""
    from signer.wire.settings import ConfigError, load_signer_config  # lazy: 70 ms, 8936 KiB

    try:
        load_signer_config(home_of(ctx))
    except ConfigError:
        return None
    reply = _signer_call(ctx, method, params, admin=admin, down_ok=True)
    if reply is not None and not isinstance(reply, model):
        fail(f"the signer answered {method!r} with {type(reply).__name__}, not {model.__name__}")
    return reply


def _signer_call(
    ctx: typer.Context, method: str, params: dict[str, Any] | None, *, admin: bool, down_ok: bool
) -> Reply | None:
    from signer.wire.client import SignerClient  # lazy: 105 ms, 15788 KiB (3 imports)
    from signer.wire.exchange import SignerError, SignerUnavailable, load_token, read_token_file
    from signer.wire.protocol import ErrorCode

    paths = signer_paths(ctx)
    run_as = "run as the signer's user after `owlia signer init`"
    try:
        if admin:
            token = read_token_file(
                paths.admin_token, missing=f"no admin token at {paths.admin_token}: {run_as}", how=run_as
            )
        else:
            token = load_token(client_token_file(ctx))
    except PermissionError:
        if down_ok:
            return None
        fail(f"cannot read the admin token in {paths.home}: run this as the signer's user")
    except SignerError as exc:
        if down_ok:
            return None
        fail(exc.message)

    async def call() -> Reply:
        async with SignerClient(paths.socket, token) as client:
            return await client.call(method, params)

    try:
        return run(call())
    except SignerError as exc:
        if down_ok and isinstance(exc, SignerUnavailable):
            return None
        if (
            exc.code == ErrorCode.UNAUTHENTICATED
        ):  # the signer says no more (it names no token): which one, and why
            fail(f"{exc.message}: {_refused_token(ctx, paths.admin_token if admin else None)}")
        fail(exc.message)


def _refused_token(ctx: typer.Context, admin_token: Path | None) -> str:
    """Which token the signer refused, and how to get one it takes."""
    import os  # lazy: 61 ms, 8168 KiB (2 imports)

    from signer.wire.exchange import TOKEN_ENV

    if admin_token is not None:
        return (
            f"the admin token in {admin_token} is not this signer's (a signer home initialised again?); "
            "run as the signer's user with that signer's home"
        )
    where = f"${TOKEN_ENV}" if os.environ.get(TOKEN_ENV) else str(client_token_file(ctx))
    return (
        f"the token in {where} was revoked, has expired or was never issued by this signer; "
        "issue a new one with `owlia signer client add NAME --scope sign --out FILE` (as the signer's user)"
    )


def signer_call_as(
    ctx: typer.Context,
    model: type[R],
    method: str,
    params: dict[str, Any] | None = None,
    *,
    admin: bool = False,
) -> R:
    """`signer_call` for a command that names the reply model it reads."""
    reply = signer_call(ctx, method, params, admin=admin)
    if not isinstance(reply, model):
        fail(f"the signer answered {method!r} with {type(reply).__name__}, not {model.__name__}")
    return reply


def print_reply(reply: Reply) -> None:
    """A reply printed as the JSON the signer sent (the fields it set), keys sorted."""
    from signer.wire.sign_replies import dump_reply  # lazy: 61 ms, 8120 KiB

    print_json(json.loads(dump_reply(reply)))
