"""SkillHost: one warm sandbox per skill, one call at a time, restarted after any kill.

The first call to a skill stages its verified files and starts the sandbox (cold start); later
calls reuse the process (a warm call is one JSON line each way). A call that times out, floods,
oversteps the protocol or crashes kills the sandbox, and the next call starts a fresh one. Results
are untrusted text, capped, and every start, kill and call is audited.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from bot.config import SkillSettings
from bot.runtime.audit import BotAudit
from bot.tools.base import ToolContext, ToolFailure, ToolOutput
from skills_runtime.capabilities import CallState, Capabilities
from skills_runtime.manifest import ToolDecl
from skills_runtime.process import SkillCallError, SkillProcess
from skills_runtime.sandbox import Backend, Limits, SandboxUnavailable, Staged, stage
from skills_runtime.store import InstalledSkill

MESSAGE_OVERHEAD = 64 * 1024
START_TIMEOUT = 10.0


@dataclass
class _Slot:
    """One skill's process, bound to the event loop it was started under."""

    loop: asyncio.AbstractEventLoop
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    process: SkillProcess | None = None
    staged: Staged | None = None


class SkillHost:
    def __init__(self, backend: Backend, settings: SkillSettings, audit: BotAudit,
                 capabilities: Capabilities) -> None:
        self.backend = backend
        self.settings = settings
        self.audit = audit
        self.capabilities = capabilities
        self._slots: dict[str, _Slot] = {}

    def limits(self, skill: InstalledSkill) -> Limits:
        """The skill's wishes, never above the bot's settings."""
        wish = skill.manifest.resources
        return Limits(memory_mb=min(wish.memory_mb or self.settings.memory_mb, self.settings.memory_mb),
                      cpu_seconds=min(wish.cpu_seconds or self.settings.cpu_seconds, self.settings.cpu_seconds),
                      max_processes=self.settings.max_processes)

    def timeout(self, skill: InstalledSkill) -> float:
        wish = skill.manifest.resources.timeout
        return min(wish or self.settings.call_timeout, self.settings.call_timeout)

    def _slot(self, skill: InstalledSkill) -> _Slot:
        loop = asyncio.get_running_loop()
        slot = self._slots.get(skill.name)
        if slot is None or slot.loop is not loop:
            if slot is not None and slot.process is not None:
                slot.process.kill_now()  # started under an event loop that is gone
            slot = self._slots[skill.name] = _Slot(loop, staged=slot.staged if slot else None)
        return slot

    async def _running(self, skill: InstalledSkill, slot: _Slot) -> SkillProcess:
        if slot.process is not None and slot.process.alive:
            return slot.process
        started = time.monotonic()
        process: SkillProcess | None = None
        try:
            if slot.staged is None or not slot.staged.skill.exists():
                slot.staged = stage(skill.folder, skill.tree_hash)  # refuses a tree changed since load
            process = SkillProcess(self.backend, slot.staged, skill.manifest.entrypoint, self.limits(skill),
                                   max_message=self.settings.max_result_bytes + MESSAGE_OVERHEAD)
            await process.start(START_TIMEOUT)
        except (SkillCallError, OSError, ValueError, SandboxUnavailable) as exc:
            stderr = ""
            if process is not None:
                await process.kill()
                stderr = process.stderr_tail[-1000:]
            self.audit.record("skill.start_failed", skill=skill.name, backend=self.backend.name, error=str(exc),
                              stderr=stderr)
            why = "it failed while loading" if getattr(exc, "from_skill", False) else str(exc)
            raise ToolFailure(f"skill {skill.name} could not start in its sandbox: {why}") from None
        declared = [t.name for t in skill.manifest.tools]
        self.audit.record("skill.started", skill=skill.name, backend=self.backend.name,
                          seconds=round(time.monotonic() - started, 4), tools=process.exported,
                          missing=[name for name in declared if name not in process.exported])
        slot.process = process
        return process

    async def call(self, ctx: ToolContext, skill: InstalledSkill, decl: ToolDecl,
                   arguments: dict[str, Any]) -> ToolOutput:
        slot = self._slot(skill)
        async with slot.lock:
            process = await self._running(skill, slot)
            state = CallState()

            async def on_callback(method: str, params: dict[str, Any]) -> Any:
                return await self.capabilities.handle(ctx, skill, decl, state, method, params)

            started = time.monotonic()
            try:
                result = await process.request("tools/call", {"name": decl.name, "arguments": arguments},
                                               timeout=self.timeout(skill), on_callback=on_callback)
            except SkillCallError as exc:
                self.audit.record("skill.call", skill=skill.name, tool=decl.name, outcome="error",
                                  killed=exc.killed, error=str(exc), seconds=round(time.monotonic() - started, 4),
                                  stderr=process.stderr_tail[-1000:] if exc.killed else "")
                if exc.killed:
                    ctx.services.events.emit("tool", "skill.killed", {"skill": skill.name, "tool": decl.name,
                                                                       "reason": str(exc)})
                if not exc.from_skill:
                    raise ToolFailure(f"skill {skill.name} failed: {exc}") from None
                # The skill's own error text is content from the skill: fenced and scanned like a result.
                return self._output(skill, f"the skill reported an error: {exc}", state)
        text = result.get("text") if isinstance(result, dict) else None
        if not isinstance(text, str):
            raise ToolFailure(f"skill {skill.name} returned no text result")
        self.audit.record("skill.call", skill=skill.name, tool=decl.name, outcome="ok", bytes=len(text),
                          seconds=round(time.monotonic() - started, 4))
        return self._output(skill, text, state)

    def _output(self, skill: InstalledSkill, text: str, state: CallState) -> ToolOutput:
        limit = self.settings.max_result_bytes
        if len(text) > limit:
            text = text[:limit] + f"\n[... cut: the skill returned {len(text)} characters]"
        return ToolOutput(f"[result of third-party skill {skill.name}; untrusted]\n{text}", untrusted=True,
                          data=state.signed)

    async def close(self) -> None:
        for slot in self._slots.values():
            if slot.process is not None:
                if slot.loop is asyncio.get_running_loop():
                    await slot.process.shutdown()
                else:
                    slot.process.kill_now()
            if slot.staged is not None:
                slot.staged.remove()
        self._slots.clear()
        await self.capabilities.close()
