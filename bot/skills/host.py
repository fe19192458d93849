"""SkillHost: one warm sandbox per skill, one call at a time, restarted after any kill.

The first call to a skill stages its verified files and starts the sandbox (cold start); later
calls reuse the process (a warm call is one JSON line each way). A call that times out, floods,
oversteps the protocol or crashes kills the sandbox, and the next call starts a fresh one. Results
are untrusted text, capped, and every start, kill and call is audited.

Nothing of a skill may run between calls (rlimits are per process, so left-over processes would
use the machine without bound): after each call the sandbox stays warm only if it holds nothing but
the SDK, and while it idles a watcher kills it at the first sign of activity (see proctree), after
`idle_timeout` seconds without calls, or when the backend cannot look inside it at all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from bot.config import SkillSettings
from bot.observability.audit import BotAudit
from bot.skills.capabilities import CallState, Capabilities
from bot.tools.base import ToolContext, ToolFailure, ToolOutput
from skills_runtime.manifest import ToolDecl
from skills_runtime.process import SkillCallError, SkillProcess
from skills_runtime.proctree import Snapshot
from skills_runtime.sandbox import Backend, Limits, SandboxUnavailable, Staged, stage
from skills_runtime.store import InstalledSkill

log = logging.getLogger(__name__)
MESSAGE_OVERHEAD = 64 * 1024
START_TIMEOUT = 10.0
IDLE_TIMEOUT = 120.0
"""Seconds a warm sandbox waits for its next call before it is stopped."""
IDLE_CHECK = 0.25
"""Seconds between two looks at an idle sandbox."""
SETTLE_CHECK = 0.005
"""Seconds between looks right after a call, until two agree: the sandbox's quiet baseline."""
SETTLE_DEADLINE = 1.0
"""A sandbox not quiet this long after its answer is killed (the SDK blocks on its next request at once)."""


@dataclass
class _Slot:
    """One skill's process, bound to the event loop it was started under."""

    loop: asyncio.AbstractEventLoop
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    process: SkillProcess | None = None
    staged: Staged | None = None
    watch: asyncio.Task | None = None


class SkillHost:
    def __init__(
        self,
        backend: Backend[Any],
        settings: SkillSettings,
        audit: BotAudit,
        capabilities: Capabilities,
        *,
        idle_timeout: float = IDLE_TIMEOUT,
        idle_check: float = IDLE_CHECK,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.audit = audit
        self.capabilities = capabilities
        self.idle_timeout = idle_timeout
        self.idle_check = idle_check
        self._slots: dict[str, _Slot] = {}

    def limits(self, skill: InstalledSkill) -> Limits:
        """The skill's wishes, never above the bot's settings."""
        wish = skill.manifest.resources
        return Limits(
            memory_mb=min(wish.memory_mb or self.settings.memory_mb, self.settings.memory_mb),
            cpu_seconds=min(wish.cpu_seconds or self.settings.cpu_seconds, self.settings.cpu_seconds),
            max_processes=self.settings.max_processes,
        )

    def timeout(self, skill: InstalledSkill) -> float:
        wish = skill.manifest.resources.timeout
        return min(wish or self.settings.call_timeout, self.settings.call_timeout)

    def _slot(self, skill: InstalledSkill) -> _Slot:
        loop = asyncio.get_running_loop()
        slot = self._slots.get(skill.name)
        if slot is None or slot.loop is not loop:
            if slot is not None and slot.process is not None:
                slot.process.kill_now()  # started under an event loop that is gone (and its watcher with it)
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
            process = SkillProcess(
                self.backend,
                slot.staged,
                skill.manifest.entrypoint,
                self.limits(skill),
                max_message=self.settings.max_result_bytes + MESSAGE_OVERHEAD,
            )
            await process.start(START_TIMEOUT)
        except (SkillCallError, OSError, ValueError, SandboxUnavailable) as exc:
            stderr = ""
            if process is not None:
                await process.kill()
                stderr = process.stderr_tail[-1000:]
            self.audit.record(
                "skill.start_failed",
                skill=skill.name,
                backend=self.backend.name,
                error=str(exc),
                stderr=stderr,
            )
            why = "it failed while loading" if getattr(exc, "from_skill", False) else str(exc)
            raise ToolFailure(f"skill {skill.name} could not start in its sandbox: {why}") from None
        declared = [t.name for t in skill.manifest.tools]
        self.audit.record(
            "skill.started",
            skill=skill.name,
            backend=self.backend.name,
            seconds=round(time.monotonic() - started, 4),
            tools=process.exported,
            missing=[name for name in declared if name not in process.exported],
        )
        slot.process = process
        return process

    async def call(
        self, ctx: ToolContext, skill: InstalledSkill, decl: ToolDecl, arguments: dict[str, Any]
    ) -> ToolOutput:
        slot = self._slot(skill)
        async with slot.lock:
            await self._unwatch(slot)
            process = await self._running(skill, slot)
            try:
                return await self._call(ctx, skill, decl, arguments, process)
            finally:
                await self._settle(skill, slot, process)

    async def _call(
        self,
        ctx: ToolContext,
        skill: InstalledSkill,
        decl: ToolDecl,
        arguments: dict[str, Any],
        process: SkillProcess,
    ) -> ToolOutput:
        state = CallState()

        async def on_callback(method: str, params: dict[str, Any]) -> Any:
            return await self.capabilities.handle(ctx, skill, decl, state, method, params)

        started = time.monotonic()
        try:
            result = await process.request(
                "tools/call",
                {"name": decl.name, "arguments": arguments},
                timeout=self.timeout(skill),
                on_callback=on_callback,
            )
        except SkillCallError as exc:
            self.audit.record(
                "skill.call",
                skill=skill.name,
                tool=decl.name,
                outcome="error",
                killed=exc.killed,
                error=str(exc),
                seconds=round(time.monotonic() - started, 4),
                stderr=process.stderr_tail[-1000:] if exc.killed else "",
            )
            if exc.killed:
                ctx.services.events.emit(
                    "tool", "skill.killed", {"skill": skill.name, "tool": decl.name, "reason": str(exc)}
                )
            if not exc.from_skill:
                raise ToolFailure(f"skill {skill.name} failed: {exc}") from None
            # The skill's own error text is content from the skill: fenced and scanned like a result.
            return self._output(skill, f"the skill reported an error: {exc}", state)
        text = result.get("text") if isinstance(result, dict) else None
        if not isinstance(text, str):
            raise ToolFailure(f"skill {skill.name} returned no text result")
        self.audit.record(
            "skill.call",
            skill=skill.name,
            tool=decl.name,
            outcome="ok",
            bytes=len(text),
            seconds=round(time.monotonic() - started, 4),
        )
        return self._output(skill, text, state)

    # ---- between calls ------------------------------------------------------------------------

    async def _settle(self, skill: InstalledSkill, slot: _Slot, process: SkillProcess) -> None:
        """Right after a call: the sandbox stays warm only if nothing but the idle SDK is left in it."""
        if not process.alive:
            return
        snapshot = process.snapshot()
        if snapshot is None:
            await self._stop(
                skill,
                process,
                "skill.idle_stop",
                f"the {self.backend.name} backend cannot watch an idle sandbox, so it does not stay warm",
            )
        elif snapshot.strays:
            await self._stop(
                skill,
                process,
                "skill.idle_kill",
                "left running after the call: " + ", ".join(snapshot.strays[:8]),
            )
        else:
            slot.watch = asyncio.create_task(self._watch(skill, process))

    async def _watch(self, skill: InstalledSkill, process: SkillProcess) -> None:
        """While no call runs: stop the sandbox after `idle_timeout`; kill it as soon as a process or
        thread appears in it or anything in it runs at all (its counters move from the quiet
        baseline taken right after the call), and audit it if it dies on its own or from a stderr
        flood (the reader kills it)."""
        idle_since = time.monotonic()
        exited = asyncio.ensure_future(process.wait())
        try:
            baseline = await self._quiet(process, exited)
            if isinstance(baseline, str):
                return await self._stop(skill, process, "skill.idle_kill", baseline)
            while baseline is not None and not (await asyncio.wait({exited}, timeout=self.idle_check))[0]:
                if time.monotonic() - idle_since >= self.idle_timeout:
                    reason = f"no call for {self.idle_timeout:g}s"
                    return await self._stop(skill, process, "skill.idle_stop", reason)
                snapshot = process.snapshot()
                assert snapshot is not None  # only backends that can look inside are watched
                if snapshot.strays or snapshot.counters != baseline:
                    return await self._stop(skill, process, "skill.idle_kill", _activity(snapshot))
        finally:
            exited.cancel()
        reason = process.killed_because or "the skill exited between calls"
        await self._stop(skill, process, "skill.idle_kill", reason)

    @staticmethod
    async def _quiet(process: SkillProcess, exited: asyncio.Future) -> tuple[int, ...] | str | None:
        """The sandbox's counters once two looks SETTLE_CHECK apart agree, i.e. the SDK blocks on its
        next request; the reason to kill it if something else shows or it is not quiet within
        SETTLE_DEADLINE; None if it exited. Taken right after the call, not at the first idle look:
        otherwise a skill could work in the gap after each answer and never be seen."""
        deadline = time.monotonic() + SETTLE_DEADLINE
        previous: tuple[int, ...] | None = None
        while not exited.done():
            snapshot = process.snapshot()
            assert snapshot is not None  # only backends that can look inside are watched
            if snapshot.strays:
                return _activity(snapshot)
            if snapshot.counters == previous:
                return snapshot.counters
            if time.monotonic() >= deadline:
                return f"still running {SETTLE_DEADLINE:g}s after its answer"
            previous = snapshot.counters
            await asyncio.sleep(SETTLE_CHECK)
        return None

    async def _stop(self, skill: InstalledSkill, process: SkillProcess, kind: str, reason: str) -> None:
        """Kill the sandbox (the next call starts a fresh one); audited first, in case we are cancelled."""
        self.audit.record(
            kind,
            skill=skill.name,
            backend=self.backend.name,
            reason=reason,
            stderr=process.stderr_tail[-1000:] if kind == "skill.idle_kill" else "",
        )
        if kind == "skill.idle_kill":
            log.warning("skill %s killed between calls: %s", skill.name, reason)
        await process.kill()

    @staticmethod
    async def _unwatch(slot: _Slot) -> None:
        """A call is about to use the sandbox: the watcher steps aside (and is done when we go on)."""
        task, slot.watch = slot.watch, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])

    def _output(self, skill: InstalledSkill, text: str, state: CallState) -> ToolOutput:
        limit = self.settings.max_result_bytes
        if len(text) > limit:
            text = text[:limit] + f"\n[... cut: the skill returned {len(text)} characters]"
        return ToolOutput(
            f"[result of third-party skill {skill.name}; untrusted]\n{text}",
            untrusted=True,
            data=state.signed,
        )

    async def close(self) -> None:
        for slot in self._slots.values():
            if slot.process is not None:
                if slot.loop is asyncio.get_running_loop():
                    await self._unwatch(slot)
                    await slot.process.shutdown()
                else:
                    slot.process.kill_now()
            if slot.staged is not None:
                slot.staged.remove()
        self._slots.clear()
        await self.capabilities.close()


def _activity(snapshot: Snapshot) -> str:
    """Why a sandbox that should be idle is killed: what was found running, or that it ran."""
    if snapshot.strays:
        return "running between calls: " + ", ".join(snapshot.strays[:8])
    return "the sandbox ran code between calls"
