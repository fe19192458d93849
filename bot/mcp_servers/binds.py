"""Which host folders an MCP server may have bound into its sandbox: never the bot's secrets.

A stdio server gets the folders of its `binds` read-only. Run as an ordinary user, the bot shares
that user's files with the sandbox user's view of them, so a bind of the OwliaBot home (auth.json,
secrets/signer.token), the bot's workspace, the signer home (the keystore) or the folder of the
signer's socket, of a
folder above one of them, or of one inside them, would hand the server what the sandbox keeps out.
Checked when the server is declared (`owlia mcp add`) and again each time it starts, on the resolved
path (a symlink counts as what it points to), so a registry edited by hand gains nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bot.config import load_bot_config
from bot.mcp_servers.store import McpError
from signer.wire.settings import SignerSettings, signer_home, socket_path


@dataclass(frozen=True)
class Protected:
    """A folder no bind may expose: its resolved path and what it is, in the user's words."""

    path: Path
    what: str


def protected_paths(home: Path, signer: object | None = None) -> tuple[Protected, ...]:
    """The OwliaBot home, the bot's workspace, the signer home and the signer socket's folder, as this
    home's config names them.

    `signer`: the config's signer section when the caller has it; otherwise it is read from the home,
    and an unreadable config gives the defaults (a bind is then still checked against the home)."""
    workspace = Path(home) / "workspace"
    config_signer: object = SignerSettings()
    try:
        config = load_bot_config(home)
        config_signer, workspace = config.signer, config.workspace(home)
    except Exception:  # noqa: BLE001 - a broken config must not turn the check off; defaults still hold
        pass
    chosen = signer if isinstance(signer, SignerSettings) else config_signer
    assert isinstance(chosen, SignerSettings)
    return (
        Protected(_real(home), "the OwliaBot home (auth.json, the signer token)"),
        Protected(_real(workspace), "the bot's workspace (your files and the agent's memory)"),
        Protected(_real(signer_home(home, chosen)), "the signer home (the keystore)"),
        Protected(_real(socket_path(home, chosen).parent), "the folder of the signer's socket"),
    )


def _real(path: Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def bind_refusal(path: str, protected: tuple[Protected, ...]) -> str | None:
    """Why `path` may not be bound, or None. Above, at or inside a protected folder is refused."""
    real = _real(Path(path))
    via = "" if str(real) == os.path.normpath(path) else f" (it resolves to {real})"
    for item in protected:
        if real == item.path:
            return f"{path}{via} is {item.what}"
        if real in item.path.parents:
            return f"{path}{via} holds {item.what} ({item.path})"
        if item.path in real.parents:
            return f"{path}{via} is inside {item.what} ({item.path})"
    return None


def check_binds(server: str, binds: tuple[str, ...], protected: tuple[Protected, ...]) -> None:
    """McpError naming the first bind that would expose a protected folder, and what to do instead."""
    for path in binds:
        why = bind_refusal(path, protected)
        if why is not None:
            raise McpError(
                f"{server}: --bind {why}; a server never sees the bot's or the signer's files. "
                "Bind only the server's own folder (its venv or node_modules)"
            )
