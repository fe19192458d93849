"""The bot's view of `config.yaml`: the `bot:` section plus the shared `chains:` list.

Like the signer's loader, unknown fields inside our section are errors that name the field, and
secrets never live here: credentials come from `owlia auth setup` (auth.json, 0600) or env vars,
the signer client token and the gateway token from 0600 files under `<home>/secrets`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from signer.wire.settings import (
    CONFIG_NAME,
    ChainSettings,
    ConfigError,
    SignerConfig,
    describe_validation_error,
    read_config_mapping,
)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LLMProfileSettings(_Section):
    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")
    model: str = Field(min_length=1, description="`provider/model` or an alias such as `sonnet`")
    credential: str | None = Field(
        default=None, description="auth.json entry to use; default: the provider name"
    )
    base_url: str | None = None
    timeout: float = Field(default=120.0, gt=0, le=600)


class LLMSettings(_Section):
    profiles: tuple[LLMProfileSettings, ...] = (
        LLMProfileSettings(name="anthropic", model="sonnet"),
        LLMProfileSettings(name="openai", model="gpt"),
    )
    max_tokens: int = Field(default=4096, ge=256, le=64000)

    @field_validator("profiles")
    @classmethod
    def _unique(cls, profiles: tuple[LLMProfileSettings, ...]) -> tuple[LLMProfileSettings, ...]:
        names = [p.name for p in profiles]
        if len(names) != len(set(names)):
            raise ValueError("profile names must be unique")
        return profiles


class AgentSettings(_Section):
    max_rounds: int = Field(default=20, ge=1, le=100)
    history_turns: int = Field(default=20, ge=1, le=500)
    tool_timeout: float = Field(default=30.0, gt=0, le=600)
    tool_result_chars: int = Field(default=16_000, ge=500, le=200_000)
    confirm_timeout: float = Field(default=120.0, gt=0, le=3600)


class ChannelToolSettings(_Section):
    allow: tuple[str, ...] | None = None  # None: every tool the context permits


class ToolSettings(_Section):
    deny: tuple[str, ...] = ()
    channels: dict[str, ChannelToolSettings] = Field(default_factory=dict)


class WebSettings(_Section):
    enabled: bool = True
    allow_domains: tuple[str, ...] = ()
    deny_domains: tuple[str, ...] = ()
    allow_private: tuple[str, ...] = ()
    allowed_ports: tuple[int, ...] = (80, 443)
    max_bytes: int = Field(default=2_000_000, ge=1024, le=50_000_000)
    timeout: float = Field(default=15.0, gt=0, le=120)


class PriceSettings(_Section):
    source: Literal["static", "coingecko"] = "static"
    static: dict[str, str] = Field(default_factory=dict)
    ttl_seconds: int = Field(default=60, ge=1, le=86400)
    coingecko_url: str = "https://api.coingecko.com"


class GatewaySettings(_Section):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)


class GroupSettings(_Section):
    """Group chats are ignored unless enabled; then only mentions count and each user gets a session."""

    enabled: bool = False
    allow_chats: tuple[str, ...] = ()  # chat / channel ids; empty admits no group
    mention_only: bool = True


class TelegramSettings(_Section):
    """The token is never here: env `token_env` or the 0600 file `<home>/secrets/telegram.token`."""

    enabled: bool = True
    token_env: str = "TELEGRAM_BOT_TOKEN"
    api_base: str | None = None  # a local Bot API server; default: Telegram's
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = None  # public URL Telegram posts to (webhook mode)
    webhook_host: str = "127.0.0.1"
    webhook_port: int = Field(default=8443, ge=0, le=65535)
    allow_from: tuple[
        str, ...
    ] = ()  # user ids admitted without pairing; empty admits nobody but paired users
    groups: GroupSettings = Field(default_factory=GroupSettings)
    stream_edit_interval: float = Field(default=1.0, ge=0.2, le=30)


class DiscordSettings(_Section):
    """The token is never here: env `token_env` or the 0600 file `<home>/secrets/discord.token`."""

    enabled: bool = True
    token_env: str = "DISCORD_BOT_TOKEN"
    api_base: str | None = None  # a local REST server; default: Discord's
    gateway_url: str | None = None  # a local gateway; default: Discord's
    allow_from: tuple[str, ...] = ()
    guilds: GroupSettings = Field(default_factory=GroupSettings)
    stream_edit_interval: float = Field(default=1.0, ge=0.2, le=30)


class ChannelSettings(_Section):
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    discord: DiscordSettings = Field(default_factory=DiscordSettings)


class PairingSettings(_Section):
    code_ttl_seconds: int = Field(default=3600, ge=60, le=86400)
    max_pending: int = Field(default=3, ge=1, le=20)
    owners: tuple[str, ...] = ()  # `channel:peer` ids that may approve pairings from a DM


class CompanionSettings(_Section):
    # The companion web app as the owner's phone opens it (the bridge's `/app/` page, e.g.
    # https://bridge.example/app/): a request waiting for approval links to it.
    app_url: str | None = Field(default=None, pattern=r"^https?://[^\s]+$", max_length=500)


class NotifySettings(_Section):
    default_target: str | None = Field(default=None, pattern=r"^(telegram|discord|console):[^\s]+$")


class CronSettings(_Section):
    enabled: bool = True
    timezone: str = "UTC"
    misfire_grace_seconds: int = Field(default=3600, ge=0, le=7 * 86400)  # later than this: skipped
    coalesce: bool = True  # several missed fires run once


class HeartbeatSettings(_Section):
    enabled: bool = False
    every_minutes: int = Field(default=30, ge=1, le=24 * 60)
    active_hours: str | None = Field(default="08:00-22:00", pattern=r"^\d{2}:\d{2}-\d{2}:\d{2}$")
    timezone: str = "UTC"
    profile: str | None = None  # an llm profile name, e.g. a cheaper model
    target: str | None = None  # default: notify.default_target


class SkillSettings(_Section):
    backend: Literal["auto", "bubblewrap", "docker", "gvisor"] = "auto"
    call_timeout: float = Field(default=30.0, gt=0, le=600)
    memory_mb: int = Field(default=256, ge=16, le=8192)
    cpu_seconds: int = Field(default=30, ge=1, le=3600)
    max_processes: int = Field(default=32, ge=1, le=4096)
    max_result_bytes: int = Field(default=1_000_000, ge=1024, le=50_000_000)
    # Docker backend only: a local engine socket (never TCP, never $DOCKER_HOST) and an image that
    # is already there (a skill run never pulls); pin it by digest where you can.
    docker_host: str = Field(default="unix:///var/run/docker.sock", pattern=r"^unix:///")
    docker_image: str = Field(default="python:3.11-slim", min_length=1, max_length=255)


class McpSettings(_Section):
    """Limits for MCP servers (docs/mcp.md); the servers themselves are in <home>/mcp/servers.json,
    written only by `owlia mcp`."""

    enabled: bool = True
    call_timeout: float = Field(default=30.0, gt=0, le=600)
    memory_mb: int = Field(default=4096, ge=64, le=16384)  # address space: Node reserves ~2 GiB at start
    memory_ceiling_mb: int = Field(
        default=1024, ge=32, le=65536
    )  # the whole server's memory (a cgroup, else polled)
    cpu_seconds: int = Field(default=300, ge=1, le=86400)  # over the server's whole life (RLIMIT_CPU)
    max_processes: int = Field(default=64, ge=1, le=4096)
    max_result_bytes: int = Field(default=1_000_000, ge=1024, le=50_000_000)
    max_resource_chars: int = Field(
        default=100_000, ge=1024, le=10_000_000
    )  # of one resource the model reads
    idle_timeout: float = Field(default=300.0, gt=0, le=86400)
    idle_cpu_seconds: float = Field(default=1.0, gt=0, le=60)  # CPU a server may use per 10 s between calls
    allowed_urls: tuple[str, ...] = ()  # streamable-HTTP servers: exact URLs the user allows


class BotSettings(_Section):
    workspace: Path | None = None  # default: <home>/workspace
    chain_id: int | None = None  # default chain for tools; default: the first configured chain
    llm: LLMSettings = Field(default_factory=LLMSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    prices: PriceSettings = Field(default_factory=PriceSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    channels: ChannelSettings = Field(default_factory=ChannelSettings)
    pairing: PairingSettings = Field(default_factory=PairingSettings)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    companion: CompanionSettings = Field(default_factory=CompanionSettings)
    cron: CronSettings = Field(default_factory=CronSettings)
    heartbeat: HeartbeatSettings = Field(default_factory=HeartbeatSettings)
    skills: SkillSettings = Field(default_factory=SkillSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)


class BotConfig(SignerConfig):
    """Everything the bot reads. The `signer:` section is read too, to find the signer's socket.

    The signer ignores the sections it does not read (`bot:`); the bot reads the whole file, so an
    unknown top-level key (a typo such as `chians:`) is an error here, not silently the defaults."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    bot: BotSettings = Field(default_factory=BotSettings)

    @property
    def default_chain(self) -> ChainSettings:
        wanted = self.bot.chain_id
        chain = self.chain(wanted) if wanted is not None else (self.chains[0] if self.chains else None)
        if chain is None:
            raise ConfigError(f"bot.chain_id {wanted} is not in `chains`")
        return chain

    def workspace(self, home: Path) -> Path:
        return (self.bot.workspace or home / "workspace").expanduser()


def load_bot_config(home: Path) -> BotConfig:
    path = home / CONFIG_NAME
    try:
        config = BotConfig.model_validate(read_config_mapping(path))
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(str(path), exc)) from None
    config.default_chain  # noqa: B018 - validates bot.chain_id against chains
    return config
