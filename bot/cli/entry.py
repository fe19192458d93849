"""The `owlia` process's entry point (`owlia`, `python -m bot.cli`): two command lines without typer,
everything else through the typer app.

- `owlia [--home PATH] start`, which a service manager runs, goes straight to its work
  (bot/cli/start_run.py): about 45 ms less on the way to the bot's first `/health` 200.
- `owlia [--home H] sign send OPTIONS` is a request or two and an answer; typer, click and an event
  loop were about a fifth of its instructions (docs/benchmarks.md, "Start-up"); through typer it
  takes 22 ms more (126 -> 148 ms wall median, 121 -> 142 ms CPU; bench/cli_bench.py, 20 pairs on a
  quiet machine; 23-26 ms more CPU in 2 runs of 15 under load). When
  `sign_send.from_argv` reads the command line exactly as typer would (every value plain), the
  command runs here: the same body as the typer command, its worded errors printed as `fail` prints
  them, and the exits typer's main would take (Ctrl-C 130, end of input "Aborted!", a closed pipe 1);
  `owlia start` exits 130 for a Ctrl-C that comes before the bot has its own handler.

Any other command line, `--help` and every usage error included, goes to the typer app (bot/cli/app.py).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.cli import process
from bot.cli.say import error
from bot.cli.start_run import run_start
from policies.kernel.home import resolve_home

if TYPE_CHECKING:
    from bot.cli.sign_send import SendRequest


def main() -> None:
    args = sys.argv[1:]
    process.prepare()
    home = direct_home(args)
    if home is not None:
        _start(home)
    if "send" in args:
        from bot.cli.sign_send import from_argv  # lazy: 9 ms, 1448 KiB

        request = from_argv(args, os.environ)
        if request is not None:
            process.run(lambda: _sign_send(request))
            return
    from bot.cli.app import main as typer_main  # lazy: 29 ms, 4648 KiB

    refusing_damaged_state(typer_main)


def refusing_damaged_state(body: Callable[[], object]) -> None:
    """Run `body`; a damaged state file (policies.kernel.files.DamagedFile) or a private path that is not
    what it must be (PermissionProblem: a file where `logs/` goes) ends the process with its worded
    `error:` and exit 1, not a traceback. Nothing was written over it."""
    try:
        body()
    except Exception as exc:  # the kernel is imported only here: `owlia --help` stays light
        from policies.kernel.files import DamagedFile, PermissionProblem  # lazy: 2 ms, 1584 KiB

        if not isinstance(exc, (DamagedFile, PermissionProblem)):
            raise
        sys.exit(worded(str(exc)))


# ---- owlia start ------------------------------------------------------------------------------


def direct_home(argv: list[str]) -> str | None:
    """`owlia start`'s home when `argv` is exactly `start`, `--home PATH start` or `--home=PATH start`:
    "" for the default (OWLIA_HOME, else ~/.owliabot). None for anything else (`start --help`, another
    command, a typo): typer parses those as always."""
    if argv == ["start"]:
        return ""
    if (
        len(argv) == 3
        and argv[0] == "--home"
        and argv[1]
        and not argv[1].startswith("-")
        and argv[2] == "start"
    ):
        return argv[1]
    if (
        len(argv) == 2
        and argv[0].startswith("--home=")
        and len(argv[0]) > len("--home=")
        and argv[1] == "start"
    ):
        return argv[0][len("--home=") :]
    return None


def _start(home: str) -> None:
    try:
        refusing_damaged_state(lambda: sys.exit(run_start(resolve_home(home or None))))
    except (
        KeyboardInterrupt
    ):  # Ctrl-C before the bot's own handler is installed: as typer's main exits for it
        sys.stderr.write("\n")
        sys.exit(130)


# ---- owlia sign send --------------------------------------------------------------------------


def _sign_send(request: SendRequest) -> None:
    process.loading(one_shot=True)
    sys.exit(as_typer_would(lambda: _send(request)))


def _send(request: SendRequest) -> int:
    from bot.cli.sign_send import Refused, send_transfer  # lazy: 9 ms, 1452 KiB

    try:
        return send_transfer(request)
    except Refused as exc:
        return worded(exc.message)


def worded(message: str) -> int:
    """`error: MESSAGE` on stderr exactly as the typer command prints it (policies.kernel.cli.fail),
    without loading typer for it (bot/cli/say.py). The exit code: fail's."""
    error(message)
    return 1


def as_typer_would(body: Callable[[], int]) -> int:
    """`body`'s exit code, and the exits typer's main (typer.core._main) takes for what escapes a command."""
    try:
        return body()
    except EOFError:
        from typer import _click  # lazy: 28 ms, 4544 KiB

        _click.echo(file=sys.stderr)
        _click.echo("Aborted!", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        from typer._click.utils import PacifyFlushWrapper  # lazy: 27 ms, 4544 KiB

        sys.stdout = PacifyFlushWrapper(sys.stdout)
        sys.stderr = PacifyFlushWrapper(sys.stderr)
        return 1
