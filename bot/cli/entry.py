"""The `owlia` process's entry point (`owlia`, `python -m bot.cli`).

`owlia [--home PATH] start`, which a service manager runs, goes straight to its work
(bot/cli/start_run.py) without typer: about 45 ms less on the way to the bot's first `/health` 200.
Everything else, `owlia start --help` included, goes through typer's command tree (bot/cli/app.py).
"""

from __future__ import annotations

import os
import sys


def direct_home(argv: list[str]) -> str | None:
    """`owlia start`'s home when `argv` is exactly `start`, `--home PATH start` or `--home=PATH start`:
    "" for the default (OWLIA_HOME, else ~/.owliabot). None for anything else (`start --help`, another
    command, a typo): typer parses those as always."""
    if argv == ["start"]:
        return ""
    if len(argv) == 3 and argv[0] == "--home" and argv[1] and not argv[1].startswith("-") and argv[2] == "start":
        return argv[1]
    if len(argv) == 2 and argv[0].startswith("--home=") and len(argv[0]) > len("--home=") and argv[1] == "start":
        return argv[0][len("--home="):]
    return None


def main() -> None:
    home = direct_home(sys.argv[1:])
    if home is None:
        from bot.cli.app import main as commands

        commands()
        return
    from policies.kernel.pydantic_plugins import ENV, stand_in_loader

    os.environ.setdefault(ENV, "__all__")  # as bot.cli.app.main does for every command
    stand_in_loader()
    try:
        from bot.cli.start_run import run_start
        from policies.kernel.home import resolve_home

        code = run_start(resolve_home(home or None))
    except KeyboardInterrupt:  # Ctrl-C before the bot's own handler is installed: as click says it
        sys.stderr.write("\nAborted!\n")
        code = 1
    sys.exit(code)
