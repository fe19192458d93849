"""What the audit and doctor look at: one OwliaBot home, its config and the signer it points to.

Loaded once, tolerantly: a broken config is itself a finding, so loading never raises; checks
that need the config raise `Skip` when it is missing.
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bot.ops.checks import Skip

if TYPE_CHECKING:
    from bot.config import BotConfig
    from signer.wire.settings import SignerPaths

CHANNEL_TOKEN_FILES = {"telegram": "telegram.token", "discord": "discord.token"}


@dataclass
class OpsContext:
    home: Path
    config: BotConfig | None = None
    config_error: str | None = None
    bot_uid: int | None = None  # the bot's user; default: owner of the home
    rpc_timeout: float = 3.0
    http_timeout: float = 5.0
    now: float = field(default_factory=time.time)  # tests look at the future instead of waiting for it
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    companion_dirs: list[Path] = field(default_factory=list)  # main-key keystores to check (OWL-MAIN-001)

    @classmethod
    def load(cls, home: Path, *, bot_user: str | None = None, **kwargs: object) -> OpsContext:
        from bot.config import load_bot_config  # lazy: 32 ms, 2996 KiB (2 imports)
        from signer.wire.settings import ConfigError

        ctx = cls(home=home, **kwargs)  # type: ignore[arg-type]
        try:
            ctx.config = load_bot_config(home)
        except ConfigError as exc:
            ctx.config_error = str(exc)
        except OSError as exc:  # e.g. a config.yaml this user may not read
            ctx.config_error = f"{home / 'config.yaml'}: cannot read ({exc.strerror})"
        ctx.bot_uid = resolve_uid(bot_user) if bot_user is not None else _owner(home)
        return ctx

    # ---- the parts checks need ----------------------------------------------------------------

    def need_config(self) -> BotConfig:
        if self.config is None:
            raise Skip("config.yaml does not load (see OWL-CONF-001 / `owlia doctor`)")
        return self.config

    @property
    def secrets_dir(self) -> Path:
        return self.home / "secrets"

    def signer_paths(self) -> SignerPaths:
        from signer.wire.settings import SignerPaths  # lazy: 14 ms, 1052 KiB

        return SignerPaths.from_config(self.home, self.need_config())

    def channel_token(self, channel: str) -> str | None:
        """The channel token from its env var or its file, as the channel itself would find it."""
        settings = getattr(self.need_config().bot.channels, channel)
        value = self.env.get(settings.token_env)
        if value:
            return value.strip()
        path = self.secrets_dir / CHANNEL_TOKEN_FILES[channel]
        try:
            return path.read_text(encoding="utf-8").strip() or None
        except (FileNotFoundError, PermissionError):
            return None


def require_visible(path: Path) -> None:
    """Skip the calling check if `path` is missing or hidden from this user (the signer's files,
    audited as the bot's user, should be exactly that)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        raise Skip(f"{path} does not exist") from None
    except PermissionError:
        raise Skip(f"{path} is not visible to this user: run as the signer's user or root") from None


def resolve_uid(user: str) -> int:
    return int(user) if user.isdigit() else pwd.getpwnam(user).pw_uid


def _owner(path: Path) -> int | None:
    try:
        return path.stat().st_uid
    except OSError:
        return None


def readable_by(path: Path, uid: int) -> bool:
    """Can `uid` (with its groups) open `path` for reading, or list it if a directory? A real trial.

    As root we ask a child process running as that user, so ACLs, group membership and every
    parent directory count exactly as the kernel sees them; as that user we just try. The child
    is /bin/sh, not Python: the bot's interpreter may live where the other user cannot reach.
    """
    if uid == os.geteuid():
        try:
            os.listdir(path) if path.is_dir() else open(path, "rb").close()
        except OSError:
            return False
        return True
    if os.geteuid() != 0:
        raise Skip("run as root (or as the bot's user) to test what the bot's user can read")
    try:
        entry = pwd.getpwuid(uid)
        gid, groups = entry.pw_gid, os.getgrouplist(entry.pw_name, entry.pw_gid)
    except KeyError:
        gid, groups = uid, []
    probe = 'if [ -d "$1" ]; then ls -- "$1"; else cat -- "$1"; fi >/dev/null 2>&1'
    done = subprocess.run(
        ["/bin/sh", "-c", probe, "probe", str(path)],
        capture_output=True,
        user=uid,
        group=gid,
        extra_groups=groups,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        timeout=10,
    )
    return done.returncode == 0


def is_socket(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
