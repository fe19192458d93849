"""Where a signer home keeps its files: a light module, so a CLI command that only needs the
socket or the admin token's path (e.g. `owlia sign send`) does not import the daemon (approvals,
engine, policy loader), which cost about 90 ms per command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from signer.settings import SignerConfig, signer_home, socket_path

DATABASE = "signer.db"
ANCHOR = "audit.anchor"
POLICY = "policy.yaml"
ADMIN_TOKEN = "admin.token"


@dataclass(frozen=True, slots=True)
class SignerPaths:
    home: Path
    socket: Path

    @classmethod
    def from_config(cls, owlia_home: Path, config: SignerConfig) -> SignerPaths:
        return cls(signer_home(owlia_home, config.signer), socket_path(owlia_home, config.signer))

    @property
    def db(self) -> Path:
        return self.home / DATABASE

    @property
    def anchor(self) -> Path:
        return self.home / ANCHOR

    @property
    def policy(self) -> Path:
        return self.home / POLICY

    @property
    def admin_token(self) -> Path:
        return self.home / ADMIN_TOKEN
