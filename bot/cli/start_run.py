"""`owlia start`'s work, without typer: the command as typer mounts it (bot/cli/start_cmd.py) and the
`owlia` process's direct way to it (bot/cli/entry.py) both end here.

The bot's way to its first `/health` 200 is mostly imports; typer and its click take about 45 ms of
it and parse two words, so `owlia [--home PATH] start` does not load them. What it prints and its
exit codes are the command's: 0 once stopped, 1 for a bad config or a bot already running on this
home, 3 if a channel was down when it stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bot.cli.say import YELLOW, error, say
from bot.net.lean_httpx import skip_httpx_cli

if TYPE_CHECKING:
    from bot.runtime.launcher import Launch


def run_start(home: Path) -> int:
    """Run the bot on `home` until SIGINT/SIGTERM; the exit code (errors already printed)."""
    import gc  # lazy: 6 ms, 1148 KiB (2 imports)
    import logging

    # The way to ready is imports and the models and tables they build: the cyclic collector would
    # walk that growing heap again and again (about 5 % of the CPU) and find next to nothing to free.
    # The launcher turns it back on, with one full pass, once the rest of the bot has loaded
    # (bot/runtime/launcher.py).
    gc.disable()

    skip_httpx_cli()  # before anything imports httpx: its CLI (rich, pygments) stays out of the bot
    from bot.config import load_bot_config  # lazy: 199 ms, 25180 KiB (5 imports)
    from bot.runtime.instance import InstanceBusy
    from bot.runtime.launcher import serve
    from policies.kernel.aio import run
    from signer.wire.settings import ConfigError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not (home / "config.yaml").exists():  # defaults alone would run forever with no channel to talk on
        error(
            f"no config.yaml in {home}: run `owlia init` first, then give the bot a chat channel (a Telegram or "
            "Discord token: docs/self-hosting.md), or talk to it on this terminal with `owlia chat`"
        )
        return 1
    try:
        config = load_bot_config(home)
    except ConfigError as exc:
        error(str(exc))
        return 1

    def ready(launch: Launch) -> None:
        running = ", ".join(launch.channels) or "no chat channel"
        say(f"owlia: running with {running}; Ctrl-C stops.")
        for name, why in launch.skipped.items():
            say(f"owlia: {name} skipped: {why}", YELLOW)
        if not launch.channels:  # after the skipped channels' own reasons
            say(
                "owlia: nobody can reach this bot: give it a Telegram or Discord token (docs/self-hosting.md), "
                "or talk to it on this terminal with `owlia chat`",
                YELLOW,
            )

    try:
        launch = run(serve(home, config, on_ready=ready))
    except InstanceBusy as exc:
        error(str(exc))
        return 1
    if down := launch.states.down():
        # a supervisor sees it in the exit status too, not only in /health while it ran
        error(
            f"stopped while {', '.join(down)} {'was' if len(down) == 1 else 'were'} down "
            "(see the log for why; `owlia doctor` checks the tokens and the network)"
        )
        return 3
    return 0
