"""Where a channel's bot token comes from: an env var, else a 0600 file under `<home>/secrets`.

Never config.yaml. A token file that group or other can read is refused with the fix in the
message, like the signer's own secrets: a leaked bot token lets anyone read and answer as the bot.
Works for any channel settings with a `token_env` field (Telegram, Discord).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from policies.kernel.files import PermissionProblem, check_private_file


class TokenError(Exception):
    """The token exists but may not be used (permissions, symlink, empty)."""


class HasTokenEnv(Protocol):
    @property
    def token_env(self) -> str: ...


def token_path(home: Path, name: str) -> Path:
    return home / "secrets" / f"{name}.token"


def load_token(home: Path, settings: HasTokenEnv, name: str) -> str | None:
    """The token, or None when none is configured (the channel is then skipped with a warning)."""
    from_env = os.environ.get(settings.token_env, "").strip()
    if from_env:
        return from_env
    path = token_path(home, name)
    if not path.exists() and not path.is_symlink():
        return None
    try:
        check_private_file(path)
    except PermissionProblem as exc:
        raise TokenError(f"refusing the {name} token: {exc}") from None
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise TokenError(f"{path} is empty; put the {name} bot token in it or set {settings.token_env}")
    return token
