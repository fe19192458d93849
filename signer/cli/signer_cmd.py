"""`owlia signer`: set up, run and administer the signer daemon (run these as the signer's user)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from policies.kernel.cli import fail, print_json, read_passphrase, run
from signer.wire.cli import signer_call, signer_config, signer_paths

app = typer.Typer(help="The signer daemon: the only process that holds keys.", no_args_is_help=True)
client_app = typer.Typer(help="Clients allowed to talk to the signer.", no_args_is_help=True)
key_app = typer.Typer(help="Tier 2 session keys.", no_args_is_help=True)
app.add_typer(client_app, name="client")
app.add_typer(key_app, name="session-key")

PASSPHRASE_FILE = typer.Option(
    None, "--passphrase-file", help="0600 file holding the passphrase (else OWLIA_SIGNER_PASSPHRASE, else a prompt)."
)


@app.command("init")
def init(
    ctx: typer.Context,
    passphrase_file: Optional[Path] = PASSPHRASE_FILE,
    policy: Optional[Path] = typer.Option(None, exists=True, dir_okay=False, help="Policy to install (default: the conservative default)."),
) -> None:
    """Create the signer home (0700), the encrypted keystore, the database, the policy and an admin token."""
    from policies.loader import PolicyError
    from signer.daemon import init_home
    from signer.keystore import KeystoreError

    paths = signer_paths(ctx)
    passphrase = read_passphrase(passphrase_file, confirm=True)
    try:
        init_home(paths, passphrase, policy_file=policy)
    except (KeystoreError, PolicyError, FileExistsError, PermissionError) as exc:
        fail(str(exc))
    typer.echo(f"signer home ready at {paths.home}")
    typer.echo("next: `owlia signer serve`, then `owlia signer session-key create` and "
               "`owlia signer client add bot --scope sign`")


@app.command("serve")
def serve(ctx: typer.Context, passphrase_file: Optional[Path] = PASSPHRASE_FILE) -> None:
    """Unlock the keystore and serve JSON-RPC on the signer socket until SIGTERM."""
    import logging

    from policies.loader import PolicyError
    from signer.daemon import Daemon, serve_forever
    from signer.keystore import KeystoreError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    paths = signer_paths(ctx)
    if not (paths.home / "keystore.json").exists():
        fail(f"no keystore in {paths.home}: run `owlia signer init` first")
    passphrase = read_passphrase(passphrase_file)
    try:
        daemon = Daemon(paths, signer_config(ctx), passphrase)
    except (KeystoreError, PolicyError, PermissionError) as exc:
        fail(str(exc))
    typer.echo(f"signer unlocked; serving on {paths.socket}", err=True)
    run(serve_forever(daemon))


@app.command("status")
def status(ctx: typer.Context) -> None:
    """Ask the running signer how it is (uses the admin token if readable, else this home's client token)."""
    import os

    token = signer_paths(ctx).admin_token
    print_json(signer_call(ctx, "status", admin=token.exists() and os.access(token, os.R_OK)))


@app.command("reload")
def reload(ctx: typer.Context) -> None:
    """Re-read the signer's policy file: a tightening applies at once, a loosening waits for your companion.

    The same as sending the daemon SIGHUP, but it prints what happened. A file that does not validate
    changes nothing."""
    result = signer_call(ctx, "policy.reload", admin=True)
    print_json(result)
    if result["status"] == "proposed":
        typer.echo(f"the new policy loosens the one in force ({len(result['widens'])} change(s)); approve it on "
                   "your companion. Until then the current policy stays.", err=True)


# ---- clients ---------------------------------------------------------------------------------


def _db(ctx: typer.Context):
    from signer.store.db import connect

    paths = signer_paths(ctx)
    if not paths.db.exists():
        fail(f"no signer database at {paths.db}: run `owlia signer init` first")
    return connect(paths.db, readonly=True)


@client_app.command("add")
def client_add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Client name, e.g. bot."),
    scope: str = typer.Option("sign", help="read | sign | bridge | admin"),
    ttl_days: Optional[int] = typer.Option(None, help="Expire the token after this many days (1-365; default 90)."),
    no_expiry: bool = typer.Option(False, "--no-expiry", help="A token that never expires (not recommended)."),
    out: Optional[Path] = typer.Option(None, help="Write the token to this file (0600) instead of printing it."),
) -> None:
    """Issue a token for a client. It is shown once; only its hash is kept."""
    from signer.admin import issue_client
    from policies.kernel.files import write_private_file
    from signer.auth import DAY, DEFAULT_TOKEN_TTL_DAYS, MAX_TOKEN_TTL_DAYS
    from signer.wire.protocol import Scope

    try:
        scope_value = Scope(scope)
    except ValueError:
        fail(f"scope must be one of: {', '.join(s.value for s in Scope)}")
    if no_expiry and ttl_days is not None:
        fail("give either --ttl-days or --no-expiry, not both")
    if ttl_days is not None and not 1 <= ttl_days <= MAX_TOKEN_TTL_DAYS:
        fail(f"--ttl-days must be between 1 and {MAX_TOKEN_TTL_DAYS} (got {ttl_days}); "
             "for a token that never expires, say --no-expiry")
    ttl_seconds = None if no_expiry else (ttl_days or DEFAULT_TOKEN_TTL_DAYS) * DAY
    if no_expiry:
        typer.echo(f"warning: the token for {name} never expires; a leaked copy works until you run "
                   f"`owlia signer client revoke {name}`, and `owlia security audit` will flag it", err=True)
    try:
        client, token = issue_client(signer_paths(ctx), name, scope_value, ttl_seconds)
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private_file(out, token.encode())
        typer.echo(f"token for {client.name} ({scope}) written to {out}")
    else:
        typer.echo(token)


@client_app.command("list")
def client_list(ctx: typer.Context) -> None:
    """List clients (never their tokens); "active" as the signer judges it, by its saved clock."""
    from signer.auth import list_clients
    from signer.clock import estimate

    conn = _db(ctx)
    now = estimate(conn)
    print_json([{"name": c.name, "id": c.client_id, "scope": c.scope.value, "active": c.active(now),
                 "expires_at": c.expires_at, "revoked_at": c.revoked_at} for c in list_clients(conn)])


@client_app.command("revoke")
def client_revoke(ctx: typer.Context, name: str = typer.Argument(...)) -> None:
    """Revoke a client's token; open connections lose it on their next request."""
    from signer.admin import revoke

    if not revoke(signer_paths(ctx), name):
        fail(f"no active client named {name!r}")
    typer.echo(f"revoked {name}")


# ---- session keys (through the running daemon, which holds the master key) --------------------


def _key_call(ctx: typer.Context, method: str, **params) -> None:
    from signer.wire.client import new_idempotency_key

    print_json(signer_call(ctx, method, {"idempotency_key": new_idempotency_key("cli"), **params}, admin=True))


@key_app.command("create")
def key_create(
    ctx: typer.Context,
    chain_id: int = typer.Option(31337, "--chain", help="Chain id."),
    ttl_hours: Optional[float] = typer.Option(None, help="Lifetime (default from config: 7 days)."),
    cap: Optional[str] = typer.Option(None, help="Balance cap in wei (default from config)."),
) -> None:
    """Create a session key inside the signer; prints its id and address, never the key."""
    params: dict = {"chain_id": chain_id}
    if ttl_hours:
        params["ttl_seconds"] = int(ttl_hours * 3600)
    if cap:
        params["balance_cap"] = cap
    _key_call(ctx, "session_key.create", **params)


@key_app.command("list")
def key_list(ctx: typer.Context) -> None:
    print_json(signer_call(ctx, "session_key.list", admin=True))


@key_app.command("rotate")
def key_rotate(ctx: typer.Context, key_id: str = typer.Argument(...)) -> None:
    """Retire a key and create its successor."""
    _key_call(ctx, "session_key.rotate", key_id=key_id)


@key_app.command("revoke")
def key_revoke(ctx: typer.Context, key_id: str = typer.Argument(...)) -> None:
    """Revoke a key at once."""
    _key_call(ctx, "session_key.revoke", key_id=key_id)


@key_app.command("topup")
def key_topup(ctx: typer.Context, key_id: str = typer.Argument(...), amount: Optional[str] = typer.Option(None, help="wei")) -> None:
    """Fund a session key up to its cap (dev chains only; elsewhere prints what to send)."""
    _key_call(ctx, "session_key.topup", key_id=key_id, **({"amount": amount} if amount else {}))


@app.command("freeze")
def freeze(ctx: typer.Context) -> None:
    """Kill switch from the signer's host: stop all Tier 2 signing and revoke every session key now.

    For when the companion cannot reach the signer. Only a paired companion can lift the freeze
    (`owlia companion unfreeze` or the app)."""
    print_json(signer_call(ctx, "signer.freeze", admin=True))
