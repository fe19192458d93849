"""config.yaml for the typer commands that cannot run without it (chat, pair, cron, up).

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
    from bot.config import load_bot_config  # pydantic and YAML: when the command runs, not for --help
    from signer.wire.settings import ConfigError

    try:
        return load_bot_config(home)
    except ConfigError as exc:
        fail(str(exc))
