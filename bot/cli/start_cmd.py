"""`owlia start`: run the bot with every configured channel until Ctrl-C or SIGTERM."""

from __future__ import annotations

import typer

from bot.cli.start_run import run_start
from policies.kernel.cli import home_of


def start(ctx: typer.Context) -> None:
    """Run Telegram/Discord (those with a token), cron, heartbeat and the control plane."""
    code = run_start(home_of(ctx))
    if code:
        raise typer.Exit(code)
