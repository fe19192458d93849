"""`owlia pair`: approve, list and revoke who may talk to the bot on Telegram and Discord."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict

import typer

from bot.cli.config_file import load_or_fail
from policies.kernel.cli import fail, home_of, print_json

app = typer.Typer(
    help="Pair chat users with the bot (default deny: strangers get a code you approve here).",
    no_args_is_help=True,
)


def _store(ctx: typer.Context):
    from bot.channels.access import open_access  # lazy: 107 ms, 16308 KiB

    home = home_of(ctx)
    return open_access(home, load_or_fail(home).bot.pairing)


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@app.command("approve")
def approve(ctx: typer.Context, code: str = typer.Argument(..., help="The code the user was sent.")) -> None:
    """Admit the user who was sent CODE."""
    import getpass  # lazy: 99 ms, 16632 KiB (2 imports)

    from bot.channels.access import PairingError

    store = _store(ctx)
    try:
        grant = store.approve(code, by=f"cli:{getpass.getuser()}")
    except PairingError as exc:
        fail(str(exc))
    finally:
        store.close()
    typer.echo(f"paired {grant.channel}:{grant.peer} ({grant.display or 'no name'})")


@app.command("list")
def list_(
    ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Machine-readable output.")
) -> None:
    """Paired users and pending codes."""
    store = _store(ctx)
    try:
        grants, pending = store.grants(), store.pending()
    finally:
        store.close()
    if json_out:
        print_json({"paired": [asdict(g) for g in grants], "pending": [asdict(p) for p in pending]})
        return
    typer.echo("paired:" if grants else "paired: nobody")
    for g in grants:
        typer.echo(
            f"  {g.channel}:{g.peer}  {g.display or '-'}  since {_when(g.approved_at)} by {g.approved_by}"
        )
    typer.echo("pending codes:" if pending else "pending codes: none")
    for p in pending:
        typer.echo(f"  {p.code}  {p.channel}:{p.peer}  {p.display or '-'}  expires {_when(p.expires_at)}")


@app.command("revoke")
def revoke(
    ctx: typer.Context, who: str = typer.Argument(..., help="channel:peer, e.g. telegram:123456")
) -> None:
    """Remove a paired user; their next message gets a new pairing code."""
    channel, _, peer = who.partition(":")
    if not channel or not peer:
        fail("give the user as channel:peer, e.g. telegram:123456")
    store = _store(ctx)
    try:
        removed = store.revoke(channel, peer)
    finally:
        store.close()
    if not removed:
        fail(f"{who} is not paired")
    typer.echo(f"revoked {who}")
