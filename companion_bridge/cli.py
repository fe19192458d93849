"""`owlia bridge serve`: the companion bridge, a separate process between companions and the signer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from policies.kernel.cli import fail, home_of
from signer.wire.cli import signer_paths

app = typer.Typer(
    help="The companion bridge (untrusted transport for Tier 1 approvals).", no_args_is_help=True
)
TOKEN_ENV = "OWLIA_BRIDGE_TOKEN"


@app.callback()
def bridge() -> None:
    """Keeps `serve` a subcommand (a one-command typer app would otherwise collapse into it)."""


def bridge_token(ctx: typer.Context, token_file: Optional[Path]) -> str:
    """The bridge's signer token (scope `bridge`): env, else a 0600 file."""
    from policies.kernel.files import check_private_file  # lazy: 1 ms, 1120 KiB

    token = os.environ.get(TOKEN_ENV)
    if token:
        return token.strip()
    path = token_file or home_of(ctx) / "secrets" / "bridge.token"
    if not path.exists():
        fail(
            f"no bridge token: set {TOKEN_ENV} or write {path} (0600); create one with "
            f"`owlia signer client add bridge --scope bridge --out {path}`"
        )
    try:
        check_private_file(path)
    except PermissionError as exc:
        fail(str(exc))
    return path.read_text(encoding="utf-8").strip()


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", help="Listen address; anything but loopback needs TLS."),
    port: int = typer.Option(8765, min=1, max=65535, help="TCP port."),
    tls_cert: Optional[Path] = typer.Option(None, exists=True, dir_okay=False),
    tls_key: Optional[Path] = typer.Option(None, exists=True, dir_okay=False),
    token_file: Optional[Path] = typer.Option(
        None, help="The bridge's signer token (default <home>/secrets/bridge.token)."
    ),
    token_ttl: int = typer.Option(300, help="Seconds a companion's connection token lives."),
    trusted_proxy: list[str] = typer.Option(
        [], "--trusted-proxy", help="A reverse proxy whose X-Forwarded-For is believed (repeatable)."
    ),
    push: bool = typer.Option(
        True,
        "--push/--no-push",
        help="Web Push to companion web apps that subscribed (only a request id is sent).",
    ),
    push_contact: str = typer.Option(
        "mailto:owliabot@localhost", help="VAPID contact (mailto: or https:) for push services."
    ),
) -> None:
    """Serve pairing, device login and request delivery (FastAPI + WebSocket on uvicorn)."""
    import logging  # lazy: 339 ms, 41332 KiB (3 imports)

    from companion_bridge.limits import BridgeLimits
    from companion_bridge.server import BridgeConfigError, BridgeOptions, serve as run_bridge

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        limits = BridgeLimits(trusted_proxies=frozenset(trusted_proxy))
    except ValueError as exc:
        fail(str(exc))
    options = BridgeOptions(
        home=home_of(ctx) / "bridge",
        signer_socket=signer_paths(ctx).socket,
        signer_token=bridge_token(ctx, token_file),
        host=host,
        port=port,
        tls_cert=tls_cert,
        tls_key=tls_key,
        token_ttl_seconds=token_ttl,
        limits=limits,
        push=push,
        push_subject=push_contact,
    )
    try:
        options.check()
    except BridgeConfigError as exc:
        fail(str(exc))
    typer.echo(f"bridge on {options.audience} -> signer {options.signer_socket}", err=True)
    try:
        run_bridge(options)
    except BridgeConfigError as exc:
        fail(str(exc))
