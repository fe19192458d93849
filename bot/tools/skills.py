"""Installed skills as tools: `skill_<skill>_<tool>`, at the tier SKILL.md declares.

Only enabled skills whose files and permissions still match what the user approved are offered, and
only when a sandbox backend is available (there is no unsandboxed fallback). The declared tier
decides everything as for built-in tools: `write` needs the user's confirmation, `sign` exists only
in a private DM, and the registry's context rules apply. Results are untrusted and capped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, create_model

from bot.config import SkillSettings
from bot.net.ssrf import FetchPolicy
from bot.tools.base import Level, Tool, ToolArgs, ToolContext, ToolOutput
from bot.tools.registry import SKILL_TOOL_PREFIX
from skills_runtime.manifest import PropertySchema, ToolDecl
from skills_runtime.store import InstalledSkill, SkillError, SkillStore

log = logging.getLogger(__name__)
_TYPES: dict[str, type] = {"string": str, "integer": int, "boolean": bool}


class SkillArgs(ToolArgs):
    """Strict: "5" is not 5 and 1 is not True; the skill gets exactly the declared types."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def tool_name(skill: str, tool: str) -> str:
    return f"{SKILL_TOOL_PREFIX}{skill}_{tool}"


def _field(prop: PropertySchema, required: bool) -> tuple[Any, Any]:
    kind: Any = Literal[prop.enum] if prop.enum else _TYPES[prop.type]  # type: ignore[valid-type]
    constraints = {k: v for k, v in {"max_length": prop.max_length, "min_length": prop.min_length,
                                     "pattern": prop.pattern, "ge": prop.minimum, "le": prop.maximum}.items()
                   if v is not None and not prop.enum}
    if required:
        return kind, Field(description=prop.description or None, **constraints)
    if prop.default is not None:
        return kind, Field(default=prop.default, description=prop.description or None, **constraints)
    return kind | None, Field(default=None, description=prop.description or None, **constraints)


def args_model(skill: str, decl: ToolDecl) -> type[ToolArgs]:
    """A pydantic model for the declared argument schema (unknown fields refused, strict types)."""
    schema = decl.input_schema
    fields = {name: _field(prop, name in schema.required) for name, prop in schema.properties.items()}
    return create_model(f"Skill_{skill}_{decl.name}", __base__=SkillArgs, **fields)  # type: ignore[call-overload]


def skill_tool(host: Any, skill: InstalledSkill, decl: ToolDecl) -> Tool:
    model = args_model(skill.name, decl)
    name = tool_name(skill.name, decl.name)

    async def handler(ctx: ToolContext, args: ToolArgs) -> ToolOutput:
        return await host.call(ctx, skill, decl, args.model_dump(exclude_none=True))

    def confirmation(args: ToolArgs) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in args.model_dump(exclude_none=True).items())
        return f"Run {decl.name}({shown}) of the third-party skill {skill.name} v{skill.manifest.version}"

    description = f"[third-party skill {skill.name} v{skill.manifest.version}] {decl.description}"
    return Tool(name, description, Level(decl.level), model, handler, timeout=host.timeout(skill) + 5,
                confirmation=confirmation if decl.level == "write" else None)


@dataclass
class SkillTools:
    """What build_runtime registers, and the host to close when the runtime stops."""

    tools: list[Tool] = field(default_factory=list)
    host: Any = None
    problems: list[str] = field(default_factory=list)

    async def close(self) -> None:
        if self.host is not None:
            await self.host.close()


def load_skill_tools(home: Path, settings: SkillSettings, fetch_policy: FetchPolicy | None, *,
                     resolve: Any = None) -> SkillTools:
    """Tools of every enabled, unchanged skill; none at all without a sandbox backend."""
    from bot.runtime.audit import BotAudit
    from skills_runtime.capabilities import Capabilities
    from skills_runtime.host import SkillHost
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
    audit = BotAudit(Path(home) / "logs" / "skills-audit.jsonl")
    backend, why = select_backend(settings.backend, docker_host=settings.docker_host,
                                  docker_image=settings.docker_image)
    if backend is None:
        result.problems.append(f"no sandbox backend, so no skill runs: {why}")
        audit.record("skill.no_backend", choice=settings.backend, reason=why, skills=names)
        log.warning("skills disabled: %s", why)
        return result
    result.host = SkillHost(backend, settings, audit, Capabilities(audit, fetch_policy, resolve=resolve))
    for name in names:
        try:
            skill = store.load(name)
        except SkillError as exc:
            result.problems.append(str(exc))
            audit.record("skill.refused", skill=name, reason=str(exc))
            log.warning("skill %s not loaded: %s", name, exc)
            continue
        result.tools += [skill_tool(result.host, skill, decl) for decl in skill.manifest.tools]
    return result
