"""`owlia service install`: the same two-user split as the compose setup, as systemd units.

The signer runs as its own system user with its state in /var/lib/owliabot-signer (0700) and
its socket in /run/owliabot (0750, group owlia-sock); the bot runs as another user that joins
owlia-sock and nothing else, so it can connect to the socket and cannot read a key. Both units
are sandboxed by systemd (no capabilities, read-only system, private /tmp, no new privileges).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SIGNER_UNIT = "owliabot-signer.service"
BOT_UNIT = "owliabot.service"


@dataclass(frozen=True, slots=True)
class ServiceLayout:
    signer_user: str = "owlia-signer"
    bot_user: str = "owlia-bot"
    socket_group: str = "owlia-sock"
    signer_home: Path = Path("/var/lib/owliabot-signer")
    bot_home: Path = Path("/var/lib/owliabot")
    runtime_dir: str = "owliabot"  # /run/owliabot
    passphrase_file: Path = Path("/etc/owliabot/signer.passphrase")
    python: str = field(default_factory=lambda: sys.executable)
    bot_command: tuple[str, ...] = ("start",)

    @property
    def socket(self) -> Path:
        return Path("/run") / self.runtime_dir / "signer.sock"


_HARDENING = """\
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
UMask=0077
Restart=on-failure
RestartSec=5s
"""


def signer_unit(layout: ServiceLayout) -> str:
    """The signer: its state dir is private; its runtime dir is where the socket group may enter."""
    home = layout.signer_home
    return f"""\
[Unit]
Description=OwliaBot signer (holds the keys, enforces the policy)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User={layout.signer_user}
Group={layout.socket_group}
StateDirectory={home.name}
StateDirectoryMode=0700
RuntimeDirectory={layout.runtime_dir}
RuntimeDirectoryMode=0750
LoadCredential=passphrase:{layout.passphrase_file}
Environment=OWLIA_HOME={home}
ExecStart={layout.python} -m bot.cli --home {home} signer serve --passphrase-file ${{CREDENTIALS_DIRECTORY}}/passphrase
ReadWritePaths={home} /run/{layout.runtime_dir}
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
MemoryMax=256M
TasksMax=64
{_HARDENING}
[Install]
WantedBy=multi-user.target
"""


def bot_unit(layout: ServiceLayout) -> str:
    """The bot: joins the socket group only; the signer's state dir is not even visible to it."""
    home = layout.bot_home
    command = " ".join(layout.bot_command)
    return f"""\
[Unit]
Description=OwliaBot (agent and chat channels; holds no key)
After=network-online.target {SIGNER_UNIT}
Wants=network-online.target
Requires={SIGNER_UNIT}

[Service]
Type=simple
User={layout.bot_user}
Group={layout.bot_user}
SupplementaryGroups={layout.socket_group}
StateDirectory={home.name}
StateDirectoryMode=0700
Environment=OWLIA_HOME={home}
ExecStart={layout.python} -m bot.cli --home {home} {command}
ReadWritePaths={home}
InaccessiblePaths=-{layout.signer_home}
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
MemoryMax=1G
TasksMax=256
{_HARDENING}
[Install]
WantedBy=multi-user.target
"""


def service_config(layout: ServiceLayout, bot_uid: int, *, rpc_url: str, chain_id: int) -> str:
    """config.yaml for both homes: the signer reads `chains` and `signer`, the bot everything."""
    config = {
        "chains": [
            {
                "id": chain_id,
                "name": "anvil" if chain_id == 31337 else f"chain-{chain_id}",
                "rpc_url": rpc_url,
                "dev": chain_id == 31337,
            }
        ],
        "signer": {
            "home": str(layout.signer_home / "signer"),
            "socket": str(layout.socket),
            "socket_group": layout.socket_group,
            "allowed_uids": [bot_uid],
        },
    }
    return "# OwliaBot config written by `owlia service install`. No secrets here.\n" + yaml.safe_dump(
        config, sort_keys=False
    )


def install_commands(layout: ServiceLayout) -> list[list[str]]:
    """The users and group the units expect (idempotence is the caller's: skip what exists)."""
    return [
        ["groupadd", "--system", layout.socket_group],
        [
            "useradd",
            "--system",
            "--gid",
            layout.socket_group,
            "--home-dir",
            str(layout.signer_home),
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            layout.signer_user,
        ],
        [
            "useradd",
            "--system",
            "--user-group",
            "--groups",
            layout.socket_group,
            "--home-dir",
            str(layout.bot_home),
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            layout.bot_user,
        ],
    ]
