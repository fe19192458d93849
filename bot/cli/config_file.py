"""config.yaml for the typer commands that cannot run without it (chat, pair, cron, up), and the
home directory for those that create it (init, up).

A config that does not load stops the command with the loader's own words (the file and the field
that is wrong) and exit 1, never a traceback. `owlia start` says the same without typer
(bot/cli/start_run.py); `owlia mcp` and `owlia doctor` go on with defaults or a finding instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from policies.kernel.cli import fail

if TYPE_CHECKING:
    from bot.config import BotConfig


def load_or_fail(home: Path) -> BotConfig:
    """`home`'s config.yaml, or `error: <why>` on stderr and exit 1."""
    from bot.config import (  # lazy: 84 ms, 11192 KiB (2 imports)
        load_bot_config,  # pydantic and YAML: when the command runs, not for --help
    )
    from signer.wire.settings import ConfigError

    try:
        return load_bot_config(home)
    except ConfigError as exc:
        fail(str(exc))


def private_dir_or_fail(path: Path) -> Path:
    """`path` as a private (0700) directory of this user, created if missing, or `error: <why>` and
    exit 1: someone else's home, a file where the directory goes, a parent this user cannot write."""
    from policies.kernel.files import (  # lazy: 1 ms, 1064 KiB
        PathNotAllowed,
        PermissionProblem,
        ensure_private_dir,
    )

    try:
        return ensure_private_dir(path)
    except PathNotAllowed as exc:  # a file or a symlink where the directory goes: not a matter of users
        fail(f"{exc}, or give another home with --home or OWLIA_HOME")
    except PermissionProblem as exc:
        fail(f"{exc}: run as the user who owns it, or give another home with --home or OWLIA_HOME")
    except PermissionError:
        fail(
            f"cannot use {path} (permission denied): run as the user who owns it, or give another home with "
            "--home or OWLIA_HOME"
        )
    except OSError as exc:  # a file where the directory goes is PathNotAllowed (ensure_private_dir)
        fail(
            f"cannot use {path} as a private directory ({exc.strerror}): give another home with --home or "
            "OWLIA_HOME"
        )
