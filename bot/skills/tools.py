"""Installed skills as tools: `skill_<skill>_<tool>`, at the tier SKILL.md declares.

Only enabled skills whose files and permissions still match what the user approved are offered, and
only when a sandbox backend is available (there is no unsandboxed fallback). The declared tier
decides everything as for built-in tools: `write` needs the user's confirmation, `sign` exists only
in a private DM, and the registry's context rules apply. Results are untrusted and capped, and each
tool's description (written by the skill's author) is labelled as untrusted third-party text. A
skill that cannot be loaded (changed, broken, or with a tool name an earlier skill already has) is
refused on its own and audited; the bot starts without it.

The set of tools is fixed at start, but `owlia skill disable`, `remove` and `approve` are honoured at
the next call without a restart: each call re-reads the registry and refuses a skill that is no
longer enabled, is gone, or is pinned to other files than the ones loaded (a restart loads those).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config import SkillSettings
from bot.net.ssrf import FetchPolicy
from bot.tools.base import Level, Tool, ToolArgs, ToolContext, ToolFailure, ToolOutput
from skills_runtime.arguments import SkillArgs, args_model as _args_model
from skills_runtime.manifest import ToolDecl, tool_name
from skills_runtime.store import InstalledSkill, SkillError, SkillStore

__all__ = ["SkillArgs", "SkillTools", "args_model", "load_skill_tools", "skill_tool", "tool_name"]
log = logging.getLogger(__name__)
UNTRUSTED_LABEL = "third-party skill, untrusted"
"""Every skill tool's description starts with this: its author wrote the rest, not us."""


class SkillToolArgs(SkillArgs, ToolArgs):
    """A skill tool's arguments as the bot's tools take them: the runtime's strict model, and a ToolArgs."""

    model_config = SkillArgs.model_config


def args_model(skill: str, decl: ToolDecl) -> type[SkillToolArgs]:
    return _args_model(skill, decl, SkillToolArgs)


def skill_tool(host: Any, skill: InstalledSkill, decl: ToolDecl) -> Tool:
    model = args_model(skill.name, decl)
    name = tool_name(skill.name, decl.name)

    store = SkillStore(skill.folder.parent.parent)  # the store it was loaded from: <home>/skills/<name>

    async def handler(ctx: ToolContext, args: ToolArgs) -> ToolOutput:
        refusal = withdrawn(store, skill)
        if refusal is not None:
            raise ToolFailure(refusal)
        return await host.call(ctx, skill, decl, args.model_dump(exclude_none=True))

    def confirmation(args: ToolArgs) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in args.model_dump(exclude_none=True).items())
        return f"Run {decl.name}({shown}) of the third-party skill {skill.name} v{skill.manifest.version}"

    description = f"[{UNTRUSTED_LABEL}: {skill.name} v{skill.manifest.version}] {decl.description}"
    return Tool(
        name,
        description,
        Level(decl.level),
        model,
        handler,
        timeout=host.timeout(skill) + 5,
        confirmation=confirmation if decl.level == "write" else None,
    )


def withdrawn(store: SkillStore, skill: InstalledSkill) -> str | None:
    """Why a loaded skill may no longer run (the user disabled, removed or re-approved it), or None.

    Read on every call: the running bot must stop using a skill the moment the user withdraws it.
    An unreadable registry withdraws everything (fail closed).
    """
    try:
        entry = store.entries().get(skill.name)
    except SkillError as exc:
        return str(exc)
    if entry is None:
        return f"the skill {skill.name} was removed (`owlia skill remove`); it no longer runs"
    if not entry.get("enabled"):
        return (
            f"the skill {skill.name} was disabled (`owlia skill disable`); it does not run until "
            f"`owlia skill enable {skill.name}`"
        )
    if entry.get("tree_hash") != skill.tree_hash:
        return (
            f"the skill {skill.name} was approved again with other files since the bot started; "
            "restart the bot to run the version you approved"
        )
    return None


@dataclass
class SkillTools:
    """What build_runtime registers, and the host to close when the runtime stops."""

    tools: list[Tool] = field(default_factory=list)
    host: Any = None
    problems: list[str] = field(default_factory=list)

    async def close(self) -> None:
        if self.host is not None:
            await self.host.close()


def load_skill_tools(
    home: Path, settings: SkillSettings, fetch_policy: FetchPolicy | None, *, resolve: Any = None
) -> SkillTools:
    """Tools of every enabled, unchanged skill; none at all without a sandbox backend."""
    from bot.observability.audit import BotAudit, skills_audit_path  # lazy: 56 ms, 2728 KiB (4 imports)
    from bot.skills.capabilities import Capabilities
    from bot.skills.host import SkillHost
    from skills_runtime.sandbox import select_backend

    store = SkillStore(home)
    result = SkillTools()
    try:
        names = store.enabled()
    except SkillError as exc:
        result.problems.append(str(exc))
        return result
    if not names:
        return result
    audit = BotAudit(skills_audit_path(home))
    backend, why = select_backend(
        settings.backend, docker_host=settings.docker_host, docker_image=settings.docker_image
    )
    if backend is None:
        result.problems.append(f"no sandbox backend, so no skill runs: {why}")
        audit.record("skill.no_backend", choice=settings.backend, reason=why, skills=names)
        log.warning("skills disabled: %s", why)
        return result
    result.host = SkillHost(backend, settings, audit, Capabilities(audit, fetch_policy, resolve=resolve))
    taken: dict[str, str] = {}  # tool name -> the skill that has it
    for name in _by_install_time(store, names):
        try:
            skill = store.load(name)
            tools = [skill_tool(result.host, skill, decl) for decl in skill.manifest.tools]
            clash = next((t.name for t in tools if t.name in taken), None)
            if clash is not None:
                raise SkillError(
                    f"{name}: its tool {clash} has the name of a tool of the skill {taken[clash]}, "
                    "installed earlier; remove one of them"
                )
        except Exception as exc:  # noqa: BLE001 - one broken skill is refused; it never stops the bot
            reason = str(exc) if isinstance(exc, SkillError) else f"{name}: {type(exc).__name__}: {exc}"
            result.problems.append(reason)
            audit.record("skill.refused", skill=name, reason=reason[:1000])
            log.warning("skill %s not loaded: %s", name, reason)
            continue
        taken.update((t.name, name) for t in tools)
        result.tools += tools
    return result


def _by_install_time(store: SkillStore, names: list[str]) -> list[str]:
    """Earliest first: when two skills' tool names meet, the later one is refused."""
    entries = store.entries()
    return sorted(names, key=lambda n: (entries.get(n, {}).get("installed_at", 0), n))
