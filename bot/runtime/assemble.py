"""Build the whole bot from the OwliaBot home: config, workspace, tools, signer client, LLM pool.

One function assembles everything so every entry point (`owlia chat`, `owlia start`, tests,
benchmarks) runs the same wiring. Anything optional that is missing (no signer token, web access
off) leaves that capability as None and its tools say so; nothing silently falls back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.channels.core import BotCore
from bot.config import BotConfig
from bot.observability.audit import BotAudit, bot_audit_path
from bot.runtime.commands import Commands
from bot.runtime.llm_pool import CredentialLookup
from bot.runtime.reach import Reach, build_reach
from bot.runtime.state import Runtime
from bot.sessions import SessionStore
from bot.tools.base import Tool
from bot.tools.executor import ToolExecutor
from bot.tools.prices import CachedPrices, HttpJsonPrices, StaticPrices
from bot.tools.registry import ToolRegistry
from bot.tools.services import Services
from bot.workspace import create_workspace


def all_tools(web: bool) -> list[Tool]:
    from bot.tools.catalog import standard_tools  # lazy: 49 ms, 2636 KiB (3 imports)
    from bot.tools.defi import DEFI_TOOLS
    from bot.tools.signing import SIGN_TOOLS

    tools: list[Tool] = [*standard_tools(), *SIGN_TOOLS, *DEFI_TOOLS]
    if web:
        from bot.tools.web import web_fetch  # lazy: 10 ms, 1140 KiB

        tools.append(web_fetch)
    return tools


class LazyFetcher:
    """A SafeFetcher built on first use: aiohttp costs a third of a second to import, and most
    messages never fetch anything."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self._inner: Any = None

    async def fetch(self, url: str, **kwargs: Any) -> Any:
        if self._inner is None:
            from bot.net.fetch import SafeFetcher  # lazy: 122 ms, 12920 KiB

            self._inner = SafeFetcher(self.policy)
        return await self._inner.fetch(url, **kwargs)

    async def close(self) -> None:
        if self._inner is not None:
            await self._inner.close()


def _prices(config: BotConfig, fetcher: Any):
    settings = config.bot.prices
    if settings.source == "coingecko" and fetcher is not None:
        source: Any = HttpJsonPrices(fetcher, base_url=settings.coingecko_url)
    else:
        source = StaticPrices(settings.static or {}, name="static (config)")
    return CachedPrices(source, ttl_seconds=settings.ttl_seconds)


def build_runtime(
    home: Path,
    config: BotConfig,
    *,
    lookup: CredentialLookup | None = None,
    metrics: Any | None = None,
    reach: Reach | None = None,
) -> Runtime:
    """The whole bot; on `reach` when given (`owlia start` builds that first, to be ready sooner)."""
    from bot.memory import MemoryIndex  # lazy: 17 ms, 2016 KiB (2 imports)
    from bot.net.ssrf import FetchPolicy

    if reach is None:
        reach = build_reach(home, config, lookup=lookup, metrics=metrics)
    home, state, events, metrics = reach.home, reach.state_dir, reach.events, reach.metrics
    workspace = config.workspace(home)
    create_workspace(workspace)
    web = config.bot.web
    fetcher = (
        LazyFetcher(
            FetchPolicy(
                allow_domains=web.allow_domains,
                deny_domains=web.deny_domains,
                allow_private=web.allow_private,
                allowed_ports=web.allowed_ports,
                max_bytes=web.max_bytes,
                timeout=web.timeout,
            )
        )
        if web.enabled
        else None
    )
    services = Services(
        workspace=workspace,
        events=events,
        default_chain_id=config.default_chain.id,
        chain_names={c.id: c.name for c in config.chains},
        signer=reach.signer,
        signer_problem=reach.signer_problem or "no signer client token",
        chain=reach.chain,
        memory=MemoryIndex(workspace, state / "memory.db"),
        fetcher=fetcher,
        state_dir=state,
        companion_app_url=config.bot.companion.app_url,
    )
    services.prices = _prices(config, fetcher)
    from bot.skills.tools import load_skill_tools  # lazy: 27 ms, 2716 KiB

    skills = load_skill_tools(home, config.bot.skills, fetcher.policy if fetcher is not None else None)
    from bot.mcp_servers.tools import McpTools  # lazy: 47 ms, 2936 KiB

    mcp = McpTools.load(
        home, config.bot.mcp, fetcher.policy if fetcher is not None else None, signer=config.signer
    )
    registry = ToolRegistry([*all_tools(web.enabled), *skills.tools], config.bot.tools, dynamic=mcp.tools)
    audit = BotAudit(bot_audit_path(home))
    executor = ToolExecutor(registry, config.bot.agent, audit, metrics)
    llm = reach.llm
    sessions = SessionStore(home / "sessions")
    runtime = Runtime(
        home,
        config,
        services,
        registry,
        executor,
        llm,
        sessions,
        audit,
        events,
        metrics,
        reach,
        skills=skills,
        mcp=mcp,
    )

    async def sample(request):  # MCP sampling: the server's messages only (bot/mcp_servers/sampling.py)
        router = await runtime.llm.router()
        if router is None:
            raise RuntimeError("no LLM credentials")
        return await router.complete(request)

    mcp.host.sampler = sample
    runtime.core = BotCore(sessions, runtime.agent, Commands(runtime), events, metrics)
    return runtime
