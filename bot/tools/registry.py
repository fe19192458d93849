"""Which tools the model may see, decided per run from where the run comes from.

Default deny: a tool is offered only if its tier is allowed in the context, it is not in the
config's deny list, and the channel's allowlist (if any) names it. The executor checks the same
set again at call time, so a model that names a tool it was never shown gets nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bot.config import ToolSettings
from bot.tools.base import ContextKind, Level, Tool
from skills_runtime.names import MCP_TOOL_PREFIX, THIRD_PARTY_PREFIXES

LEVELS_BY_CONTEXT: dict[ContextKind, frozenset[Level]] = {
    ContextKind.DM: frozenset({Level.READ, Level.WRITE, Level.SIGN}),
    ContextKind.GROUP: frozenset({Level.READ, Level.WRITE}),
    ContextKind.CRON: frozenset({Level.READ}),
    ContextKind.HEARTBEAT: frozenset({Level.READ}),
    ContextKind.SKILL: frozenset(),
    ContextKind.SCHEDULED: frozenset({Level.SIGN}),
}
"""Sign tools exist only in a private DM with the owner; unattended runs may only read. The one
exception is a scheduled job the owner made at the terminal (`owlia cron add --claim`): no model
runs in it, and only the tools below may, with the job's own stored arguments."""
ONLY_TOOLS: dict[ContextKind, frozenset[str]] = {
    ContextKind.SCHEDULED: frozenset({"claim"}),  # a claim pays only the claiming account (the signer)
}


class ToolRegistry:
    def __init__(
        self,
        tools: Iterable[Tool],
        settings: ToolSettings | None = None,
        *,
        dynamic: Callable[[], Iterable[Tool]] | None = None,
    ) -> None:
        """`dynamic`: tools that may change while the bot runs (approved MCP servers, reloaded when
        their registry file changes); asked on every lookup, under the same rules, never shadowing a
        built-in tool."""
        self._dynamic = dynamic
        self._tools: dict[str, Tool] = {}
        for item in tools:
            if item.name in self._tools:
                raise ValueError(f"two tools are named {item.name!r}")
            self._tools[item.name] = item
        self.settings = settings or ToolSettings()
        unknown = [n for n in self.settings.deny if n not in self._tools]
        for channel in self.settings.channels.values():
            unknown += [n for n in channel.allow or () if n not in self._tools]
        # a skill can be disabled or refused (changed on disk) between runs; naming it is not a typo
        unknown = [n for n in unknown if not n.startswith(THIRD_PARTY_PREFIXES)]
        if unknown:
            raise ValueError(f"config names unknown tools: {', '.join(sorted(set(unknown)))}")

    def _current(self) -> dict[str, Tool]:
        if self._dynamic is None:
            return self._tools
        merged = dict(self._tools)
        for item in self._dynamic():
            if item.name.startswith(MCP_TOOL_PREFIX):  # only third-party names; never replaces a tool
                merged.setdefault(item.name, item)
        return merged

    def __contains__(self, name: str) -> bool:
        return name in self._current()

    def all(self) -> list[Tool]:
        return list(self._current().values())

    def names(self, level: Level) -> frozenset[str]:
        return frozenset(t.name for t in self._current().values() if t.level is level)

    def _allowed(self, tool: Tool, kind: ContextKind, channel: str) -> bool:
        channel_allow = self.settings.channels.get(channel)
        only = ONLY_TOOLS.get(kind)
        return (
            tool.level in LEVELS_BY_CONTEXT[kind]
            and (only is None or tool.name in only)
            and tool.name not in self.settings.deny
            and (channel_allow is None or channel_allow.allow is None or tool.name in channel_allow.allow)
        )

    def visible(self, kind: ContextKind, channel: str) -> list[Tool]:
        return [t for t in self._current().values() if self._allowed(t, kind, channel)]

    def lookup(self, name: str, kind: ContextKind, channel: str) -> Tool | None:
        """The tool if it may run in this context, else None (never a near match)."""
        found = self._current().get(name)
        return found if found is not None and self._allowed(found, kind, channel) else None
