"""`owlia security audit`: what an attacker on this machine or in a chat could reach."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from policies.kernel.cli import fail, home_of

app = typer.Typer(help="Security checks for this OwliaBot install.", no_args_is_help=True)


@app.callback()
def group() -> None:
    """Security checks (a group, so more can join `audit`)."""


@app.command("audit")
def audit(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the stable JSON report."),
    fix: bool = typer.Option(False, "--fix", help="Apply the safe fixes (tighten permissions) first."),
    bot_user: Optional[str] = typer.Option(
        None, help="The bot's user (name or uid); default: the home's owner."
    ),
    companion_dir: Optional[list[Path]] = typer.Option(
        None,
        "--companion-dir",
        help="A companion directory on this machine (another user's): critical if the signer's user can read its "
        "main key. The OwliaBot home and the signer user's home are always searched.",
    ),
) -> None:
    """Run every check; exit 1 if anything critical remains."""
    from bot.ops.audit import security_audit  # lazy: 104 ms, 12048 KiB (4 imports)
    from bot.ops.context import OpsContext
    from bot.ops.fix import fix_all
    from bot.ops.render import print_report

    home = home_of(ctx)
    try:
        dirs = list(companion_dir or [])
        fixed = fix_all(OpsContext.load(home, bot_user=bot_user, companion_dirs=dirs)) if fix else []
        report = security_audit(OpsContext.load(home, bot_user=bot_user, companion_dirs=dirs), fixed=fixed)
    except KeyError:
        fail(f"no user named {bot_user!r} on this system")
    print_report(report, as_json)
    if not report.ok:
        raise typer.Exit(1)
