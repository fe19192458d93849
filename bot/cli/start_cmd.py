"""`owlia start`: run the bot with every configured channel until Ctrl-C or SIGTERM."""

from __future__ import annotations

import typer

from policies.kernel.cli import fail, home_of, run


def start(ctx: typer.Context) -> None:
    """Run Telegram/Discord (those with a token), cron, heartbeat and the control plane."""
    import logging

    from bot.net.lean_httpx import skip_httpx_cli

    skip_httpx_cli()  # before anything imports httpx: its CLI (rich, pygments) stays out of the bot
    from bot.config import load_bot_config
    from bot.runtime.instance import InstanceBusy
    from bot.runtime.launcher import Launch, serve
    from signer.wire.settings import ConfigError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    home = home_of(ctx)
    try:
        config = load_bot_config(home)
    except ConfigError as exc:
        fail(str(exc))

    def ready(launch: Launch) -> None:
        running = ", ".join(launch.channels) or "no chat channel"
        typer.echo(f"owlia: running with {running}; Ctrl-C stops.", err=True)
        for name, why in launch.skipped.items():
            typer.secho(f"owlia: {name} skipped: {why}", fg=typer.colors.YELLOW, err=True)

    try:
        launch = run(serve(home, config, on_ready=ready))
    except InstanceBusy as exc:
        fail(str(exc))
    if down := launch.states.down():
        # a supervisor sees it in the exit status too, not only in /health while it ran
        fail(f"stopped while {', '.join(down)} {'was' if len(down) == 1 else 'were'} down "
             "(see the log for why; `owlia doctor` checks the tokens and the network)", code=3)
