"""The signer's view of `config.yaml`: chains and its own section, nothing the bot owns.

Secrets never live here: the keystore passphrase comes from a prompt, an env var or a 0600 file,
and client tokens are issued into the signer's own database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = [
    "ADMIN_TOKEN",
    "ANCHOR",
    "CLIENT_TOKEN",
    "CONFIG_NAME",
    "DATABASE",
    "DEV_CHAIN_ID",
    "DEV_RPC_URL",
    "GWEI",
    "KEYSTORE",
    "POLICY",
    "ChainSettings",
    "MarketToken",
    "SwapMarket",
    "ConfigError",
    "DelegationContracts",
    "SignerConfig",
    "SignerPaths",
    "SignerSettings",
    "client_token_file",
    "describe_validation_error",
    "load_signer_config",
    "read_config_mapping",
    "signer_home",
    "socket_path",
]

CONFIG_NAME = "config.yaml"
DEV_CHAIN_ID = 31337
DEV_RPC_URL = "http://127.0.0.1:8545"
GWEI = 10**9


class ConfigError(Exception):
    """A config problem, worded for the user: which file, which field, what is wrong."""


_HEX_ADDRESS = r"^0x[0-9a-fA-F]{40}$"
_HEX_HASH = r"^0x[0-9a-fA-F]{64}$"


class DelegationContracts(BaseModel):
    """Tier 3 (docs/tier3.md): the Delegation Framework's contracts on this chain and the keccak-256 of
    each one's deployed code, which the signer checks (eth_getCode) before it first relies on them.
    `owlia chain dev` writes this for anvil; on a real chain name the canonical deployments."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    manager: str = Field(pattern=_HEX_ADDRESS)
    stateless_delegator: str = Field(pattern=_HEX_ADDRESS)
    entry_point: str | None = Field(default=None, pattern=_HEX_ADDRESS)
    enforcers: dict[str, str]
    code_hashes: dict[str, str]

    @model_validator(mode="after")
    def _every_contract_hashed(self) -> DelegationContracts:
        for name, address in self.enforcers.items():
            if not re.fullmatch(_HEX_ADDRESS, address):
                raise ValueError(f"enforcers.{name} must be an address")
        hashes = {k.lower(): v for k, v in self.code_hashes.items()}
        for address in (self.manager, self.stateless_delegator, *self.enforcers.values()):
            digest = hashes.get(address.lower())
            if digest is None or not re.fullmatch(_HEX_HASH, digest):
                raise ValueError(
                    f"code_hashes has no keccak-256 for {address}: the signer checks every contract"
                )
        return self

    def code_hash(self, address: str) -> str:
        return {k.lower(): v.lower() for k, v in self.code_hashes.items()}[address.lower()]

    def enforcer_map(self) -> dict[str, str]:
        return {name: address.lower() for name, address in self.enforcers.items()}


class MarketToken(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    symbol: str = Field(min_length=1, max_length=20)
    address: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    decimals: int = Field(ge=0, le=77)
    price_usd: str | None = None


class SwapMarket(BaseModel):
    """What `owlia chain dev` deployed (bot.devmarket): a record for people and tests. The signer trusts
    only its policy's `swaps:` section, never this one (docs/defi.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    weth: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    factory: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    router: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    quoter: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    position_manager: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    fee: int = Field(gt=0, lt=2**24)
    eth_price_usd: str | None = None
    tokens: tuple[MarketToken, ...] = ()


class ChainSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: int = Field(gt=0)
    name: str = Field(min_length=1, max_length=64)
    rpc_url: str
    # Optional second, independent endpoint: every receipt the signer acts on must match there too.
    check_rpc_url: str | None = None
    dev: bool = False
    explorer_tx_url: str | None = None  # e.g. "https://etherscan.io/tx/{hash}"
    # Fee ceilings, whole gwei per gas. Gas is not counted against policy limits, and the fee market
    # is read from the RPC node: these bound what a lying or broken node can make a key burn.
    max_priority_fee_gwei: int = Field(default=100, ge=0)  # a higher tip asked by the node is clamped to this
    max_fee_gwei: int = Field(default=1000, gt=0)  # above this max fee per gas nothing is signed
    # Gas limit ceiling per transaction (the node's estimate plus 20 % headroom): with max_fee_gwei it
    # bounds what one transaction can burn (3M x 1000 gwei = 3 ETH). A plain transfer takes 21 000.
    max_gas: int = Field(default=3_000_000, gt=21_000)
    delegation: DelegationContracts | None = None  # Tier 3 on this chain
    swap_market: SwapMarket | None = None  # the dev market `owlia chain dev` deployed (informational)

    # How deep the block of the transaction that took a nonce must be before the signer releases the
    # spend of its other transaction at that nonce (a reorg could undo a shallower proof). None: 1 on
    # dev chains, 12 elsewhere.
    release_confirmations: int | None = Field(default=None, ge=1, le=10_000)

    @property
    def confirmations_to_release(self) -> int:
        if self.release_confirmations is not None:
            return self.release_confirmations
        return 1 if self.dev else 12

    @field_validator("rpc_url", "check_rpc_url")
    @classmethod
    def _http_only(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _tip_within_max_fee(self) -> ChainSettings:
        if self.max_priority_fee_gwei > self.max_fee_gwei:
            raise ValueError("max_priority_fee_gwei cannot exceed max_fee_gwei")
        return self

    @property
    def max_priority_fee_wei(self) -> int:
        return self.max_priority_fee_gwei * GWEI

    @property
    def max_fee_wei(self) -> int:
        return self.max_fee_gwei * GWEI


class SignerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    home: Path | None = None  # default: <owlia home>/signer
    socket: Path | None = None  # default: <signer home>/signer.sock
    socket_group: str | None = None  # group that may connect (the bot's group in a two-user setup)
    allowed_uids: list[int] = Field(default_factory=list)  # besides the signer's own uid
    broadcast: bool = True  # false: sign and record but never send (benchmarks only)
    max_request_bytes: int = Field(default=65536, ge=1024, le=1 << 20)
    max_connections: int = Field(default=64, ge=1, le=4096)
    pending_ttl_seconds: int = Field(default=300, ge=2, le=86400)  # tests use a few seconds
    session_key_ttl_seconds: int = Field(default=7 * 86400, ge=60)
    session_key_balance_cap: int = Field(default=10**17, ge=0)  # wei: 0.1 ETH
    rpc_timeout_seconds: float = Field(default=10.0, gt=0, le=120)


class SignerConfig(BaseModel):
    """The sections the signer reads. Other top-level sections belong to the bot and are ignored."""

    model_config = ConfigDict(extra="ignore", defer_build=True)  # built on first use: its parts with it

    chains: list[ChainSettings] = Field(
        default_factory=lambda: [ChainSettings(id=DEV_CHAIN_ID, name="anvil", rpc_url=DEV_RPC_URL, dev=True)]
    )
    signer: SignerSettings = Field(default_factory=SignerSettings)

    @field_validator("chains")
    @classmethod
    def _unique_chain_ids(cls, chains: list[ChainSettings]) -> list[ChainSettings]:
        ids = [c.id for c in chains]
        if len(ids) != len(set(ids)):
            raise ValueError("chain ids must be unique")
        return chains

    def chain(self, chain_id: int) -> ChainSettings | None:
        return next((c for c in self.chains if c.id == chain_id), None)


def signer_home(home: Path, settings: SignerSettings) -> Path:
    return (settings.home or home / "signer").expanduser()


def socket_path(home: Path, settings: SignerSettings) -> Path:
    return (settings.socket or signer_home(home, settings) / "signer.sock").expanduser()


def read_config_mapping(path: Path) -> dict[str, Any]:
    """Parse the YAML file into a mapping; a missing file means embedded defaults."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (
        OSError,
        UnicodeDecodeError,
    ) as exc:  # unreadable, a directory, not text: worded, never a traceback
        if isinstance(exc, PermissionError):
            raise ConfigError(
                f"cannot read {path} (permission denied): run as the user who owns the OwliaBot "
                "home, or give a home you can read with --home or OWLIA_HOME"
            ) from None
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(
            f"cannot read {path} ({why}): it must be a YAML file; move it away and "
            "`owlia init` writes a fresh one"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}:{where} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data


def describe_validation_error(source: str, exc: ValidationError) -> str:
    """One line per problem, each naming the field path as the user wrote it."""
    lines = [f"{source}: invalid configuration"]
    for err in exc.errors():
        loc = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in err["loc"]).replace(".[", "[")
        lines.append(f"  {loc or '(top level)'}: {err['msg']}")
    return "\n".join(lines)


def load_signer_config(home: Path) -> SignerConfig:
    path = home / CONFIG_NAME
    try:
        return SignerConfig.model_validate(read_config_mapping(path))
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(str(path), exc)) from None


# The signer home's layout: what the CLI, doctor and security audit look at from outside.
KEYSTORE = "keystore.json"
DATABASE = "signer.db"
ANCHOR = "audit.anchor"
POLICY = "policy.yaml"
ADMIN_TOKEN = "admin.token"
CLIENT_TOKEN = "signer.token"  # in the OwliaBot home's secrets/: the token this home's commands sign with


def client_token_file(owlia_home: Path) -> Path:
    """Where a command run with this OwliaBot home reads its client token (0600)."""
    return owlia_home / "secrets" / CLIENT_TOKEN


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
