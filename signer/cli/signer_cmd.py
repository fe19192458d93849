"""`owlia signer`: set up, run and administer the signer daemon (run these as the signer's user)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from policies.kernel.cli import fail, print_json, read_passphrase
from signer.wire.cli import print_reply, signer_call, signer_call_as, signer_paths

if TYPE_CHECKING:
    from signer.store.db import Connection

app = typer.Typer(help="The signer daemon: the only process that holds keys.", no_args_is_help=True)
client_app = typer.Typer(help="Clients allowed to talk to the signer.", no_args_is_help=True)
key_app = typer.Typer(help="Tier 2 session keys.", no_args_is_help=True)
app.add_typer(client_app, name="client")
integrity_app = typer.Typer(
    help="Authority-bearing state: check it, and seal it after a review.", no_args_is_help=True
)
app.add_typer(key_app, name="session-key")
app.add_typer(integrity_app, name="integrity")

PASSPHRASE_FILE = typer.Option(
    None,
    "--passphrase-file",
    help="0600 file holding the passphrase (else OWLIA_SIGNER_PASSPHRASE, else a prompt).",
)


@app.command("init")
def init(
    ctx: typer.Context,
    passphrase_file: Optional[Path] = PASSPHRASE_FILE,
    policy: Optional[Path] = typer.Option(
        None, exists=True, dir_okay=False, help="Policy to install (default: the conservative default)."
    ),
) -> None:
    """Create the signer home (0700), the encrypted keystore, the database, the policy and an admin token."""
    from policies.loader import PolicyError  # lazy: 203 ms, 30876 KiB (3 imports)
    from signer.daemon import init_home
    from signer.keystore import KeystoreError

    paths = signer_paths(ctx)
    passphrase = read_passphrase(passphrase_file, confirm=True)
    try:
        init_home(paths, passphrase, policy_file=policy)
    except (KeystoreError, PolicyError, FileExistsError, PermissionError) as exc:
        fail(str(exc))
    typer.echo(f"signer home ready at {paths.home}")
    typer.echo(next_steps(passphrase_file))


def next_steps(passphrase_file: Optional[Path]) -> str:
    """What to run after `signer init`, runnable as printed: `serve` and `client add` unlock the
    keystore, so they get the same --passphrase-file init was given (without a terminal nothing can
    prompt for it)."""
    unlock = "" if passphrase_file is None else f" --passphrase-file {shlex.quote(str(passphrase_file))}"
    steps = (
        f"next: `owlia signer serve{unlock}`, then `owlia signer session-key create` and "
        f"`owlia signer client add bot --scope sign{unlock}`"
    )
    if passphrase_file is None:
        steps += " (both ask the passphrase; without a terminal, add --passphrase-file FILE)"
    return steps


@app.command("serve")
def serve(ctx: typer.Context, passphrase_file: Optional[Path] = PASSPHRASE_FILE) -> None:
    """Unlock the keystore and serve JSON-RPC on the signer socket until SIGTERM."""
    import os  # lazy: 76 ms, 13264 KiB (5 imports)
    import sys

    from policies.kernel.cli import home_of
    from policies.kernel.passphrase import PASSPHRASE_ENV
    from signer.serve import ServeError, exec_argv, locate, run_daemon

    home = home_of(ctx)
    try:
        paths, config = locate(home)
    except ServeError as exc:
        fail(str(exc))
    if passphrase_file is not None or os.environ.get(PASSPHRASE_ENV):
        # Nothing is unlocked yet: become the lean program (signer.serve), so that typer and the
        # command tree do not stay in the daemon's memory. Same pid, environment and home.
        sys.stdout.flush()
        sys.stderr.flush()
        argv = exec_argv(home, passphrase_file)
        os.execv(argv[0], argv)
    passphrase = read_passphrase(passphrase_file)  # a prompt: read here, so the daemon runs here
    try:
        run_daemon(paths, config, passphrase)
    except ServeError as exc:
        fail(str(exc))


@app.command("status")
def status(ctx: typer.Context) -> None:
    """Ask the running signer how it is (uses the admin token if readable, else this home's client token)."""
    paths = signer_paths(ctx)
    token = paths.admin_token
    if not paths.socket.exists() and paths.db.exists() and os.access(paths.db, os.R_OK):
        # Not running: say whether it refused to start over state edited offline.
        from signer.store.guard import last_integrity_event  # lazy: 38 ms, 16444 KiB

        event = last_integrity_event(_db(ctx))
        refused = (
            event is not None and event["kind"] == "integrity.refused" and not event["signer_started_since"]
        )
        print_json(
            {
                "running": False,
                "integrity": "refused" if refused else "no refusal recorded",
                **(
                    {
                        "integrity_findings": event["body"]["findings"] if event else [],
                        "what_to_do": "owlia signer integrity check, then restore signer.db from a backup "
                        "or owlia signer integrity seal",
                    }
                    if refused
                    else {}
                ),
            }
        )
        raise typer.Exit(1)
    print_reply(signer_call(ctx, "status", admin=token.exists() and os.access(token, os.R_OK)))


@app.command("reload")
def reload(ctx: typer.Context) -> None:
    """Re-read the signer's policy file: a tightening applies at once, a loosening waits for your companion.

    The same as sending the daemon SIGHUP, but it prints what happened. A file that does not validate
    changes nothing."""
    from signer.wire.replies import PolicyReloadReply, ReloadStatus  # lazy: 74 ms, 8608 KiB

    result = signer_call_as(ctx, PolicyReloadReply, "policy.reload", admin=True)
    print_reply(result)
    if result.status is ReloadStatus.PROPOSED:
        typer.echo(
            f"the new policy loosens the one in force ({len(result.widens)} change(s)); approve it on "
            "your companion. Until then the current policy stays.",
            err=True,
        )


# ---- clients ---------------------------------------------------------------------------------


def _db(ctx: typer.Context) -> Connection:
    from signer.store.db import connect  # lazy: 1 ms, 1056 KiB

    paths = signer_paths(ctx)
    if not paths.db.exists():
        fail(f"no signer database at {paths.db}: run `owlia signer init` first")
    return connect(paths.db, readonly=True)


@client_app.command("add")
def client_add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Client name, e.g. bot."),
    scope: str = typer.Option("sign", help="read | sign | bridge | admin"),
    ttl_days: Optional[int] = typer.Option(
        None, help="Expire the token after this many days (1-365; default 90)."
    ),
    no_expiry: bool = typer.Option(
        False, "--no-expiry", help="A token that never expires (not recommended)."
    ),
    out: Optional[Path] = typer.Option(
        None, help="Write the token to this file (0600) instead of printing it."
    ),
    passphrase_file: Optional[Path] = PASSPHRASE_FILE,
) -> None:
    """Issue a token for a client. It is shown once; only its hash is kept."""
    from policies.kernel.files import write_private_file  # lazy: 150 ms, 28704 KiB (5 imports)
    from signer.admin import issue_client
    from signer.auth import DAY, DEFAULT_TOKEN_TTL_DAYS, MAX_TOKEN_TTL_DAYS
    from signer.keystore import KeystoreError
    from signer.wire.protocol import Scope

    try:
        scope_value = Scope(scope)
    except ValueError:
        fail(f"scope must be one of: {', '.join(s.value for s in Scope)}")
    if no_expiry and ttl_days is not None:
        fail("give either --ttl-days or --no-expiry, not both")
    if ttl_days is not None and not 1 <= ttl_days <= MAX_TOKEN_TTL_DAYS:
        fail(
            f"--ttl-days must be between 1 and {MAX_TOKEN_TTL_DAYS} (got {ttl_days}); "
            "for a token that never expires, say --no-expiry"
        )
    ttl_seconds = None if no_expiry else (ttl_days or DEFAULT_TOKEN_TTL_DAYS) * DAY
    if no_expiry:
        typer.echo(
            f"warning: the token for {name} never expires; a leaked copy works until you run "
            f"`owlia signer client revoke {name}`, and `owlia security audit` will flag it",
            err=True,
        )
    if out:
        _check_token_out(out)  # before the client exists: a token issued and never written is lost
    try:
        client, token = issue_client(
            signer_paths(ctx), name, scope_value, ttl_seconds, passphrase=read_passphrase(passphrase_file)
        )
    except (ValueError, FileNotFoundError, KeystoreError) as exc:
        fail(str(exc))
    if out:
        try:
            write_private_file(out, token.encode())
        except OSError as exc:
            fail(
                f"client {client.name} was added but its token could not be written to {out} ({exc.strerror}); "
                f"run `owlia signer client revoke {client.name}` and add it again"
            )
        typer.echo(f"token for {client.name} ({scope}) written to {out}")
    else:
        typer.echo(token)


def _check_token_out(out: Path) -> None:
    """`--out` names a file this user can write, its directory created 0700 if missing: or exit 1."""
    if out.is_dir():
        fail(f"--out {out} is a directory: name the token file, e.g. {out / 'signer.token'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        fail(f"cannot create {out.parent} for --out ({exc.strerror}): choose a directory you can write")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        fail(f"cannot write in {out.parent} for --out: choose a directory you can write")


@client_app.command("list")
def client_list(ctx: typer.Context) -> None:
    """List clients (never their tokens); "active" as the signer judges it, by its saved clock."""
    from signer.auth import list_clients  # lazy: 54 ms, 12544 KiB (2 imports)
    from signer.clock import estimate

    conn = _db(ctx)
    now = estimate(conn)
    print_json(
        [
            {
                "name": c.name,
                "id": c.client_id,
                "scope": c.scope.value,
                "active": c.active(now),
                "expires_at": c.expires_at,
                "revoked_at": c.revoked_at,
            }
            for c in list_clients(conn)
        ]
    )


@client_app.command("revoke")
def client_revoke(
    ctx: typer.Context, name: str = typer.Argument(...), passphrase_file: Optional[Path] = PASSPHRASE_FILE
) -> None:
    """Revoke a client's token; open connections lose it on their next request."""
    from signer.admin import revoke  # lazy: 158 ms, 28608 KiB (2 imports)
    from signer.keystore import KeystoreError

    try:
        revoked = revoke(signer_paths(ctx), name, passphrase=read_passphrase(passphrase_file))
    except (FileNotFoundError, KeystoreError) as exc:
        fail(str(exc))
    if not revoked:
        fail(f"no active client named {name!r}")
    typer.echo(f"revoked {name}")


# ---- integrity of authority-bearing state (docs/signer-protocol.md, "Integrity at rest") -------


@integrity_app.command("check")
def integrity_check(ctx: typer.Context, passphrase_file: Optional[Path] = PASSPHRASE_FILE) -> None:
    """List every authority-bearing row that something without the master key wrote; exit 1 if any."""
    from signer.admin import check_integrity  # lazy: 159 ms, 28684 KiB (2 imports)
    from signer.keystore import KeystoreError

    try:
        findings = check_integrity(signer_paths(ctx), passphrase=read_passphrase(passphrase_file))
    except (FileNotFoundError, KeystoreError) as exc:
        fail(str(exc))
    from signer.store.guard import IntegrityRefused  # lazy: 39 ms, 16376 KiB

    print_json(
        {
            "ok": not findings,
            "findings": [f.to_json() for f in findings],
            **({"what_happened": str(IntegrityRefused(findings))} if findings else {}),
        }
    )
    if findings:
        raise typer.Exit(1)


@integrity_app.command("seal")
def integrity_seal(
    ctx: typer.Context,
    passphrase_file: Optional[Path] = PASSPHRASE_FILE,
    accept_policy_file: bool = typer.Option(
        False, help="The policy in force failed: install policy.yaml as it."
    ),
    accept_ledger: bool = typer.Option(
        False, help="The spend ledger failed: accept it as it is (else restore a backup)."
    ),
    accept_rollback: bool = typer.Option(
        False,
        help="The state went back to an earlier copy: keep it, frozen, with "
        "every session key and recorded revocation revoked (else restore "
        "a backup).",
    ),
) -> None:
    """After a review (`integrity check`), with the signer stopped: remove the rows that fail, seal the rest.

    Also the one-time upgrade of a home from before row MACs and the keyed audit chain."""
    from policies.loader import PolicyError  # lazy: 162 ms, 28616 KiB (3 imports)
    from signer.admin import SealRefused, seal
    from signer.keystore import KeystoreError

    paths = signer_paths(ctx)
    if paths.socket.exists():
        fail(
            f"{paths.socket} exists: stop the signer first (`owlia signer integrity seal` runs on a stopped signer)"
        )
    try:
        result = seal(
            paths,
            passphrase=read_passphrase(passphrase_file),
            accept_policy_file=accept_policy_file,
            accept_ledger=accept_ledger,
            accept_rollback=accept_rollback,
        )
    except (FileNotFoundError, KeystoreError, SealRefused, PolicyError) as exc:
        fail(str(exc))
    print_json(result.to_json())


# ---- session keys (through the running daemon, which holds the master key) --------------------


def _key_call(ctx: typer.Context, method: str, **params: Any) -> None:
    from signer.wire.exchange import new_idempotency_key  # lazy: 62 ms, 8204 KiB

    print_reply(
        signer_call(ctx, method, {"idempotency_key": new_idempotency_key("cli"), **params}, admin=True)
    )


@key_app.command("create")
def key_create(
    ctx: typer.Context,
    chain_id: int = typer.Option(31337, "--chain", help="Chain id."),
    ttl_hours: Optional[float] = typer.Option(None, help="Lifetime (default from config: 7 days)."),
    cap: Optional[str] = typer.Option(None, help="Balance cap in wei (default from config)."),
) -> None:
    """Create a session key inside the signer; prints its id and address, never the key."""
    params: dict[str, int | str] = {"chain_id": chain_id}
    if ttl_hours:
        params["ttl_seconds"] = int(ttl_hours * 3600)
    if cap:
        params["balance_cap"] = cap
    _key_call(ctx, "session_key.create", **params)


@key_app.command("list")
def key_list(ctx: typer.Context) -> None:
    print_reply(signer_call(ctx, "session_key.list", admin=True))


@key_app.command("rotate")
def key_rotate(ctx: typer.Context, key_id: str = typer.Argument(...)) -> None:
    """Retire a key and create its successor."""
    _key_call(ctx, "session_key.rotate", key_id=key_id)


@key_app.command("revoke")
def key_revoke(ctx: typer.Context, key_id: str = typer.Argument(...)) -> None:
    """Revoke a key at once."""
    _key_call(ctx, "session_key.revoke", key_id=key_id)


@key_app.command("topup")
def key_topup(
    ctx: typer.Context,
    key_id: str = typer.Argument(...),
    amount: Optional[str] = typer.Option(None, help="wei"),
) -> None:
    """Fund a session key up to its cap (dev chains only; elsewhere prints what to send)."""
    _key_call(ctx, "session_key.topup", key_id=key_id, **({"amount": amount} if amount else {}))


@app.command("freeze")
def freeze(ctx: typer.Context) -> None:
    """Kill switch from the signer's host: stop all Tier 2 signing and revoke every session key now.

    For when the companion cannot reach the signer. Only a paired companion can lift the freeze
    (`owlia companion unfreeze` or the app)."""
    print_reply(signer_call(ctx, "signer.freeze", admin=True))
