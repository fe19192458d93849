"""One running skill sandbox and the JSON-RPC conversation with it, from the host's side.

Everything the skill sends is hostile until parsed: a line longer than the message cap, more bytes
in one call than the call budget, anything that is not the answer or an allowed `core.*` request,
or silence past the deadline all end the same way: the whole sandbox is killed and the call fails.
A message the parser chokes on in any way (deep nesting raises RecursionError) is such a violation.
Stderr is drained all the time (so the skill cannot block on it) and only a bounded tail is kept;
between calls the skill has nothing to say, so more than IDLE_STDERR_BYTES there kills the sandbox.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from policies.kernel import safejson
from skills_runtime.proctree import Snapshot
from skills_runtime.sandbox import Backend, Limits, SandboxProcess, Staged

STDERR_TAIL = 4096
IDLE_STDERR_BYTES = 1 << 20
"""Stderr read while no call runs: what a call wrote may still sit in the pipe, an endless writer
(which would keep the bot's event loop busy reading) is killed."""
CALLBACK_METHODS = frozenset(("core.fetch", "core.chain", "core.sign"))

Callback = Callable[[str, dict[str, Any]], Awaitable[Any]]


class SkillCallError(Exception):
    """A call failed. `killed`: the sandbox had to be killed for it. `from_skill`: the message is
    the skill's own error text (untrusted), not the host's."""

    def __init__(self, message: str, *, killed: bool = False, from_skill: bool = False) -> None:
        super().__init__(message)
        self.killed = killed
        self.from_skill = from_skill


def _decode(line: bytes) -> dict[str, Any] | None:
    """The message, or None for anything that is not a plain JSON-RPC object. Any parser failure
    counts (ValueError, RecursionError on deep nesting, MemoryError), and so does an id or method
    that is not a plain value: both are echoed or compared, which must not fail later."""
    try:
        message = safejson.loads(line)
    except Exception:  # noqa: BLE001 - whatever the parser raises, the skill broke the protocol
        return None
    if not isinstance(message, dict):
        return None
    if not isinstance(message.get("id"), (str, int, type(None))) or not isinstance(
        message.get("method", ""), str
    ):
        return None
    return message


class CallbackDenied(Exception):
    """The host refuses a core.* request; the message goes back to the skill (never a secret)."""


class SkillProcess:
    def __init__(
        self, backend: Backend[Any], staged: Staged, entrypoint: str, limits: Limits, *, max_message: int
    ) -> None:
        self.backend = backend
        self.staged = staged
        self.entrypoint = entrypoint
        self.limits = limits
        self.max_message = max_message
        self.proc: SandboxProcess | None = None
        self.exported: list[str] = []
        self._stderr = bytearray()
        self._stderr_task: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._busy = False
        self._idle_stderr = 0
        self.killed_because: str | None = None
        """Why the process killed its own sandbox outside a call (the host audits it)."""
        self._doomed = False

    @property
    def alive(self) -> bool:
        """Running and not being killed: a sandbox sent SIGKILL is never handed another call, even
        before it is reaped (a kill interrupted by a cancellation would otherwise be reused once)."""
        return self.proc is not None and self.proc.returncode is None and not self._doomed

    @property
    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", errors="replace")

    async def start(self, timeout: float) -> None:
        self.proc = await self.backend.spawn(self.staged, self.entrypoint, self.limits, self.max_message)
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        result = await self.request("initialize", {}, timeout=timeout, on_callback=None)
        self.exported = list(result.get("tools", [])) if isinstance(result, dict) else []

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]
            if not self._busy:
                self._idle_stderr += len(chunk)
                if self._idle_stderr > IDLE_STDERR_BYTES and self.killed_because is None:
                    self.killed_because = f"wrote more than {IDLE_STDERR_BYTES} bytes to stderr between calls"
                    self.kill_now()

    async def wait(self) -> int:
        """Until the sandbox has ended, however it ended."""
        assert self.proc is not None
        return await self.proc.wait()

    def snapshot(self) -> Snapshot | None:
        """What runs in the sandbox now, or None if the backend cannot look inside it."""
        assert self.proc is not None
        return self.backend.snapshot(self.proc)

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float, on_callback: Callback | None
    ) -> Any:
        """Send one request and serve the skill's callbacks until its answer; kill on any violation."""
        if not self.alive:
            raise SkillCallError("the skill process is not running")
        self._busy, self._idle_stderr = True, 0
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(method, params, on_callback)
        except TimeoutError:
            await self.kill()
            raise SkillCallError(
                f"no answer within {timeout:g}s; the sandbox was killed", killed=True
            ) from None
        except SkillCallError:
            raise
        except BaseException:  # cancelled, or the host failed mid-conversation: the protocol state is lost
            await self.kill()
            raise
        finally:
            self._busy = False

    async def _exchange(self, method: str, params: dict[str, Any], on_callback: Callback | None) -> Any:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        my_id = next(self._ids)
        self._write({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params})
        budget = self.max_message * 2
        while True:
            try:
                line = await self.proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                await self.kill()
                raise SkillCallError(
                    f"the skill sent a message larger than {self.max_message} bytes; the sandbox was killed",
                    killed=True,
                ) from None
            if not line:
                code = await self._reap()
                raise SkillCallError(f"the skill process exited (code {code})", killed=True)
            budget -= len(line)
            if budget < 0:
                await self.kill()
                raise SkillCallError("the skill flooded its output; the sandbox was killed", killed=True)
            message = _decode(line)
            if message is None:
                await self.kill()
                raise SkillCallError(
                    "the skill broke the protocol (not a JSON-RPC message); the sandbox was killed",
                    killed=True,
                )
            if message.get("id") == my_id and "method" not in message:
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    text = error.get("message")
                    raise SkillCallError(text[:2000] if isinstance(text, str) else "error", from_skill=True)
                return message.get("result")
            if message.get("method") in CALLBACK_METHODS and on_callback is not None:
                self._write(await self._serve(message, on_callback))
                continue
            await self._violation()

    async def _serve(self, message: dict[str, Any], on_callback: Callback) -> dict[str, Any]:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
        params = message.get("params")
        try:
            if not isinstance(params, dict):
                raise CallbackDenied("params must be an object")
            reply["result"] = await on_callback(str(message["method"]), params)
        except CallbackDenied as exc:
            reply["error"] = {"code": -32001, "message": str(exc)[:500]}
        return reply

    async def _violation(self) -> None:
        await self.kill()
        raise SkillCallError("the skill sent a message it may not send; the sandbox was killed", killed=True)

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, separators=(",", ":"), default=str).encode() + b"\n")

    async def _reap(self) -> int | None:
        assert self.proc is not None
        try:
            return await asyncio.wait_for(self.proc.wait(), 2)
        except TimeoutError:
            await self.kill()
            return self.proc.returncode

    def kill_now(self) -> None:
        """Kill the whole sandbox the backend's way (bwrap's process group, or the container)."""
        if self.proc is not None and self.proc.returncode is None:
            self._doomed = True
            self.backend.kill(self.proc)

    async def kill(self) -> None:
        self.kill_now()
        if self.proc is not None:
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                pass
        if self._stderr_task is not None:
            self._stderr_task.cancel()

    async def shutdown(self, timeout: float = 1.0) -> None:
        """Ask politely, then kill: a warm process is never left behind."""
        if self.alive:
            try:
                await self.request("shutdown", {}, timeout=timeout, on_callback=None)
                await asyncio.wait_for(self.proc.wait(), timeout)  # type: ignore[union-attr]
            except (SkillCallError, TimeoutError, OSError):
                pass
        await self.kill()
