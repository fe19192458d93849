"""The assembled bot: what every entry point holds once bot/runtime/assemble.py has wired it.

Its own module so the slash commands (bot/runtime/commands.py) can use it without importing the
assembly that builds them.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.agent.loop import Agent
from bot.channels.core import BotCore
from bot.config import BotConfig
from bot.observability.audit import BotAudit
from bot.observability.events import EventBus
from bot.runtime.llm_pool import LLMPool
from bot.runtime.reach import Reach
from bot.sessions import SessionStore
from bot.tools.base import ContextKind, Tool
from bot.tools.executor import ToolExecutor
from bot.tools.registry import ToolRegistry
from bot.tools.services import Services
from bot.workspace import build_system_prompt, load_context_files


@dataclass
class Runtime:
    home: Path
    config: BotConfig
    services: Services
    registry: ToolRegistry
    executor: ToolExecutor
    llm: LLMPool
    sessions: SessionStore
    audit: BotAudit
    events: EventBus
    metrics: Any
    reach: Reach  # what it was built on and /health probes: the same signer client, chain reader and pool
    core: BotCore | None = None
    skills: Any = None
    mcp: Any = None
    clock: Callable[[], float] = time.time  # wall clock for the prompt's date and each turn's time note

    async def agent(self, profile: str | None = None) -> Agent | None:
        router = await self.llm.router(profile)
        if router is None:
            return None
        return Agent(
            router,
            self.executor,
            self.services,
            self.config.bot.agent,
            self.system_prompt,
            max_tokens=self.config.bot.llm.max_tokens,
            metrics=self.metrics,
            clock=self.clock,
        )

    def system_prompt(self, tools: Sequence[Tool], kind: ContextKind, channel: str) -> str:
        chain = self.config.default_chain
        # the day only: the prompt is a cached prefix; the time to the minute goes in each turn's note
        today = dt.datetime.fromtimestamp(self.clock(), dt.timezone.utc)
        runtime = {
            "date": today.strftime("%Y-%m-%d (UTC; the time is in the latest message)"),
            "channel": channel,
            "context": kind.value,
            "chain": f"{chain.name} ({chain.id})",
            "models": ", ".join(p.name for p in self.config.bot.llm.profiles),
        }
        files = load_context_files(self.services.workspace)
        return build_system_prompt(files, [(t.name, t.description, t.level.value) for t in tools], runtime)

    async def close(self) -> None:
        """What it added, then what it was built on (the reach closes its signer client and chain
        reader, which the services share): skills and MCP servers stop before the signer they call."""
        services = self.services
        if self.skills is not None:
            await self.skills.close()
        if self.mcp is not None:
            await self.mcp.close()
        if services.fetcher is not None:
            await services.fetcher.close()
        if services.memory is not None:
            services.memory.close()
        await self.reach.close()
