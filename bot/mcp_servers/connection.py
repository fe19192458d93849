"""One MCP server, connected through the official `mcp` SDK's ClientSession.

A stdio server runs in the skills' bubblewrap sandbox (sandbox.py) and this module is its transport:
the server's stdout is read here line by line under a size cap, parsed with the bot's nesting-safe
JSON reader and only then handed to the SDK, so a flood, a 100 MB line or a nesting bomb kills the
sandbox before the SDK sees it. An HTTP server is reached with the SDK's streamable-HTTP client, only
at a URL the user allowed.

Requests the server may send the client (sampling, elicitation, roots) are never served: the SDK's
defaults refuse them and the client does not advertise them; each one is audited and reported.

Nothing may run between calls beyond what the server was at start. A long-lived server is not a
skill: its runtime keeps threads and timers (Node's, asyncio's), so the skills' rule (no CPU tick at
all between calls) cannot hold. The watcher here instead kills the sandbox when a process appears
that was not there when the server had started, when a process started during a call outlives it by
a second, when the sandbox uses more than `idle_cpu_seconds` of CPU in any 10 s between calls, when it
writes more than 1 MiB between calls, and stops it after `idle_timeout` without a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as ProtocolError
from mcp.shared.message import SessionMessage
from mcp_types import PaginatedRequestParams, jsonrpc_message_adapter

from bot.config import McpSettings
from bot.mcp_servers.egress import Egress
from bot.mcp_servers.oauth import bot_auth
from bot.mcp_servers.remote import header_values, http_client
from bot.mcp_servers.sampling import SamplingGate
from bot.mcp_servers.sandbox import McpSandbox
from bot.mcp_servers.store import McpError, ServerDecl
from bot.observability.audit import BotAudit
from policies.kernel import safejson
from skills_runtime import proctree
from skills_runtime.memcg import Ceiling

T = TypeVar("T")
log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 64 * 1024
IDLE_BYTES = 1 << 20
STDERR_TAIL = 4096
START_TIMEOUT = 20.0
WATCH_EVERY = 0.5
MEMORY_EVERY = 0.1
CPU_WINDOW = 10.0
SETTLE = 1.0
READ_ALL = 1 << 30
"""Bytes asked of the server's output per read: more than is ever buffered, so a read takes all of it."""
SERVER_REQUESTS = frozenset(("sampling/createMessage", "elicitation/create", "roots/list"))
"""What a server may ask of its client; always refused here (and not advertised)."""


class McpCallError(Exception):
    """A call or start failed. `killed`: the sandbox was killed for it. The message is the host's."""

    def __init__(self, message: str, *, killed: bool = False) -> None:
        super().__init__(message)
        self.killed = killed


@dataclass
class ToolInfo:
    """A tool as the server lists it now (untrusted text)."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ResourceInfo:
    """A resource as the server lists it now (untrusted text)."""

    uri: str
    name: str
    title: str
    description: str
    mime_type: str


@dataclass(frozen=True)
class PromptInfo:
    """A prompt as the server lists it now (untrusted text); arguments: (name, description, required)."""

    name: str
    title: str
    description: str
    arguments: tuple[tuple[str, str, bool], ...]


MAX_PAGES, MAX_ITEMS = 20, 500  # what one listing reads of a server at most


async def _paged(
    page: Callable[[PaginatedRequestParams | None], Awaitable[tuple[list[T], str | None]]],
) -> list[T]:
    """A server's whole list, page by page (`page(params)` -> items, next cursor), bounded: a server
    that hands out cursors forever gets MAX_PAGES pages, and a listing stops past MAX_ITEMS."""
    found: list[T] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        items, cursor = await page(PaginatedRequestParams(cursor=cursor) if cursor else None)
        found += items
        if not cursor or len(found) > MAX_ITEMS:
            break
    return found


@contextlib.asynccontextmanager
async def _owning(client: Any, transport: Any):
    """The streamable-HTTP transport over our client (headers, OAuth), which is closed after it."""
    async with client, transport as streams:
        yield streams


class McpConnection:
    def __init__(
        self,
        decl: ServerDecl,
        settings: McpSettings,
        audit: BotAudit,
        *,
        sandbox: McpSandbox | None = None,
        on_refused: Any = None,
        fetch_policy: Any = None,
        resolve: Any = None,
        opener: Any = None,
        sampler: Any = None,
        home: Any = None,
        auth: Any = None,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.decl = decl
        self.auth = auth
        """An OAuth provider to use instead of the bot's (`owlia mcp login`'s, which may sign in)."""
        self.start_timeout = start_timeout
        self.home = home
        """The OwliaBot home: a remote server's header values and OAuth tokens are read from it."""
        self.settings = settings
        self.audit = audit
        self.sandbox = sandbox
        self.on_refused = on_refused
        self.fetch_policy = fetch_policy
        self._resolve = resolve
        self._opener = opener
        self.egress: Any = None
        self.sampler = sampler
        self.max_message = settings.max_result_bytes + MESSAGE_OVERHEAD
        self.proc: asyncio.subprocess.Process | None = None
        self.session: ClientSession | None = None
        self.tools: list[ToolInfo] = []
        self.tools_changed = False
        self.changed_before_result = False
        self.killed_because: str | None = None
        self._stderr = bytearray()
        self._busy = False
        self._budget = 0
        self._idle_bytes = 0
        self._closing = asyncio.Event()
        self._life: asyncio.Task | None = None
        self._watch: asyncio.Task | None = None
        self._baseline: frozenset[int] = frozenset()
        self._doomed = False
        self.ceiling: Ceiling | None = None
        self.memory_hold = ""
        """How the server's memory is held, in words: a cgroup, or polled and why (for the audit)."""
        self._memory: asyncio.Task | None = None
        self.capabilities: Any = None
        """What the server said it offers at initialize (tools, resources, prompts)."""

    # ---- state ----------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        if self._doomed or self.session is None or self._life is None or self._life.done():
            return False
        return self.proc is None or self.proc.returncode is None

    @property
    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", errors="replace")

    # ---- start ----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start (stdio: spawn in the sandbox), initialize and list the tools; McpCallError on failure."""
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._life = asyncio.create_task(self._run(ready))
        try:
            async with asyncio.timeout(self.start_timeout):
                await asyncio.shield(ready)
                self.tools = await self._list_tools()
        except TimeoutError:
            await self.kill("no answer to initialize within the start deadline")
            raise McpCallError(
                f"{self.decl.name} did not start within {self.start_timeout:g}s", killed=True
            ) from None
        except McpCallError:
            await self.kill("failed to start")
            raise
        except Exception as exc:  # noqa: BLE001 - whatever broke, the server did not start
            await self.kill("failed to start")
            root: BaseException = exc
            while isinstance(root, BaseExceptionGroup) and root.exceptions:
                root = root.exceptions[0]
            why = (
                self.killed_because
                if self.killed_because not in (None, "failed to start")
                else f"{type(root).__name__}: {str(root)[:300]}"
            )
            raise McpCallError(f"{self.decl.name} could not start: {why}", killed=True) from None
        if self.proc is not None:
            seen = proctree.usage(self.proc.pid)
            self._baseline = seen.pids if seen is not None else frozenset()
            self._watch = asyncio.create_task(self._watch_idle())  # watched until its first call too

    async def _run(self, ready: asyncio.Future) -> None:
        try:
            async with self._streams() as (read, write):
                extra: dict[str, Any] = {}
                if self.decl.sampling:  # advertised only for a server the user enabled it for
                    extra["sampling_callback"] = SamplingGate(self.decl.name, self.audit, self.sampler)
                async with ClientSession(read, write, message_handler=self._on_message, **extra) as session:
                    started = await session.initialize()
                    self.capabilities = started.capabilities
                    self.session = session
                    ready.set_result(None)
                    await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - reported through `ready` or by `alive`
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else McpCallError("cancelled"))
            if not isinstance(exc, Exception):
                raise
        finally:
            self.session = None
            self._kill_now()

    @contextlib.asynccontextmanager
    async def _streams(self):
        if self.decl.transport != "stdio":
            assert self.decl.url is not None
            try:
                auth = self.auth
                if auth is None and self.decl.oauth:
                    auth = bot_auth(self.decl, self.home)
                if self.decl.transport == "sse":  # the legacy transport: the SDK makes its client from these
                    headers = header_values(self.decl, self.home) if self.decl.headers else None
                    opened = sse_client(self.decl.url, headers=headers, auth=auth)
                else:
                    client = http_client(self.decl, self.home, auth)
                    opened = _owning(
                        client,
                        streamable_http_client(
                            self.decl.url, http_client=client, max_sse_event_size=self.max_message
                        ),
                    )
            except McpError as exc:
                raise McpCallError(str(exc)) from None
            async with opened as streams:
                yield streams[0], streams[1]
            return
        assert self.sandbox is not None
        socket_path = None
        if self.decl.network:
            if self.fetch_policy is None:
                raise McpCallError(
                    f"{self.decl.name} was allowed hosts, but web access is disabled in the bot's "
                    "configuration (bot.web), so it cannot start"
                )
            self.egress = Egress(
                self.decl.name,
                self.decl.network,
                self.audit,
                self.fetch_policy,
                resolve=self._resolve,
                opener=self._opener,
            )
            socket_path = await self.egress.start()
        self.proc, self.ceiling, how = await self.sandbox.spawn(self.decl, self.max_message, socket_path)
        ceiling = f"{self.settings.memory_ceiling_mb} MiB"
        self.memory_hold = (
            f"{how}, {ceiling}"
            if self.ceiling is not None
            else f"{ceiling}, polled every {MEMORY_EVERY:g}s (no memory cgroup: {how})"
        )
        self._memory = asyncio.create_task(self._watch_memory())
        to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write, from_session = anyio.create_memory_object_stream[SessionMessage](16)
        pumps = [
            asyncio.create_task(self._pump_out(to_session)),
            asyncio.create_task(self._pump_in(from_session)),
            asyncio.create_task(self._drain_stderr()),
            self._memory,
        ]
        try:
            yield read, write
        finally:
            self._kill_now()
            for task in pumps:
                task.cancel()
            if self.egress is not None:
                await self.egress.close()

    # ---- the stdio transport ----------------------------------------------------------------------

    async def _pump_out(self, to_session: Any) -> None:
        """Server -> session: capped lines; anything malformed or too much kills.

        Everything the server's output has brought so far is read at once and parsed before any of it
        goes on, so a tools/list_changed that arrived with a result (one write: the result, then the
        announcement) is known (`tools_changed`) before the session hands that result to its caller,
        and the next call lists the tools again first. Whether an announcement came before a result,
        in the order the server wrote them, is kept apart (`changed_before_result`): that result may
        come from the changed tool."""
        assert self.proc is not None and self.proc.stdout is not None
        partial = b""
        async with to_session:
            while True:
                chunk = await self.proc.stdout.read(
                    READ_ALL
                )  # whatever is buffered, waiting only when nothing is
                if not chunk:
                    return
                *lines, partial = (partial + chunk).split(b"\n")
                if len(partial) > self.max_message:
                    return self._violation(f"sent a message larger than {self.max_message} bytes")
                batch: list[Any] = []
                announced = self.tools_changed
                for line in lines:
                    if len(line) > self.max_message:
                        return self._violation(f"sent a message larger than {self.max_message} bytes")
                    if not self._count_out(len(line) + 1):
                        return
                    try:
                        raw = safejson.loads(line)

                        message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
                    except Exception:  # noqa: BLE001 - any parser failure (nesting, garbage) breaks the protocol
                        return self._violation("broke the protocol (not a JSON-RPC message)")
                    method = raw.get("method") if isinstance(raw, dict) else None
                    if method in SERVER_REQUESTS and not (
                        method == "sampling/createMessage" and self.decl.sampling
                    ):
                        self._refused(str(method))
                    if method == "notifications/tools/list_changed":
                        announced = True
                    elif method is None and isinstance(raw, dict) and "id" in raw:  # a response
                        self.changed_before_result = announced
                    batch.append(message)
                self.tools_changed = announced
                for message in batch:
                    await to_session.send(SessionMessage(message))

    def _count_out(self, size: int) -> bool:
        """Charge `size` bytes of output to the call's budget or to the between-calls allowance."""
        if self._busy:
            self._budget -= size
            if self._budget < 0:
                self._violation("flooded its output during a call")
                return False
        else:
            self._idle_bytes += size
            if self._idle_bytes > IDLE_BYTES:
                self._violation(f"wrote more than {IDLE_BYTES} bytes between calls")
                return False
        return True

    async def _pump_in(self, from_session: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        async with from_session:
            async for item in from_session:
                body = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    self.proc.stdin.write(body.encode() + b"\n")
                    await self.proc.stdin.drain()
                except (ConnectionError, OSError):
                    return

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        idle = 0
        while chunk := await self.proc.stderr.read(65536):
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]
            if not self._busy:
                idle += len(chunk)
                if idle > IDLE_BYTES:
                    return self._violation(f"wrote more than {IDLE_BYTES} bytes to stderr between calls")
            else:
                idle = 0

    async def _on_message(self, message: Any) -> None:
        await anyio.lowlevel.checkpoint()

    def _refused(self, method: str) -> None:
        """A sampling/elicitation/roots request: refused by the SDK (not advertised); audited here."""
        self.audit.record(
            "mcp.request_refused",
            server=self.decl.name,
            method=method,
            reason="not enabled for this server; never answered with the conversation",
        )
        log.warning("MCP server %s asked for %s; refused", self.decl.name, method)
        if self.on_refused is not None:
            self.on_refused(self.decl.name, method)

    def _violation(self, why: str) -> None:
        self.killed_because = why
        self.audit.record("mcp.killed", server=self.decl.name, reason=why, stderr=self.stderr_tail[-1000:])
        self._kill_now()

    # ---- calls ----------------------------------------------------------------------------------

    async def _list_tools(self) -> list[ToolInfo]:
        assert self.session is not None
        self.tools_changed = False  # before asking: an announcement during the listing asks again next time
        self.changed_before_result = False

        async def page(params: PaginatedRequestParams | None) -> tuple[list[ToolInfo], str | None]:
            assert self.session is not None
            result = await self.session.list_tools(params=params)
            return [
                ToolInfo(
                    t.name,
                    t.description or "",
                    dict(t.input_schema if isinstance(t.input_schema, dict) else {}),
                )
                for t in result.tools
            ], result.next_cursor

        return await _paged(page)

    async def list_resources(self, timeout: float) -> list[ResourceInfo]:
        """The server's resources now (untrusted text); none when it does not offer resources."""
        if self.session is None or getattr(self.capabilities, "resources", None) is None:
            return []

        async def page(params: PaginatedRequestParams | None) -> tuple[list[ResourceInfo], str | None]:
            assert self.session is not None
            result = await self.session.list_resources(params=params)
            return [
                ResourceInfo(str(r.uri), r.name, r.title or "", r.description or "", r.mime_type or "")
                for r in result.resources
            ], result.next_cursor

        async with asyncio.timeout(timeout):
            return await _paged(page)

    async def list_prompts(self, timeout: float) -> list[PromptInfo]:
        """The server's prompts now (untrusted text); none when it does not offer prompts."""
        if self.session is None or getattr(self.capabilities, "prompts", None) is None:
            return []

        async def page(params: PaginatedRequestParams | None) -> tuple[list[PromptInfo], str | None]:
            assert self.session is not None
            result = await self.session.list_prompts(params=params)
            return [
                PromptInfo(
                    p.name,
                    p.title or "",
                    p.description or "",
                    tuple((a.name, a.description or "", bool(a.required)) for a in p.arguments or ()),
                )
                for p in result.prompts
            ], result.next_cursor

        async with asyncio.timeout(timeout):
            return await _paged(page)

    async def request(self, what: str, timeout: float, ask: Any) -> Any:
        """One resources/read or prompts/get (`ask(session)`), under the call's deadline and byte budget;
        a failure kills the sandbox as a failed tool call does."""
        if not self.alive:
            raise McpCallError(f"the MCP server {self.decl.name} is not running")
        await self._unwatch()
        self._busy, self._budget, self._idle_bytes = True, self.max_message * 2, 0
        try:
            async with asyncio.timeout(timeout):
                assert self.session is not None
                return await ask(self.session)
        except TimeoutError:
            await self.kill(f"no answer to {what} within {timeout:g}s")
            raise McpCallError(
                f"no answer within {timeout:g}s; the sandbox was killed", killed=True
            ) from None
        except McpCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - an error answer or a broken connection
            if isinstance(exc, ProtocolError) and self.alive:
                raise McpCallError(f"the server refused {what}: {str(exc)[:300]}") from None
            why = self.killed_because or type(exc).__name__
            await self.kill(why)
            raise McpCallError(f"{what} failed ({why}); the server was stopped", killed=True) from None
        except BaseException:
            await self.kill("the request was cancelled")
            raise
        finally:
            self._busy = False
            if self.alive and self.proc is not None:
                self._watch = asyncio.create_task(self._watch_idle())

    async def refresh_tools(self, timeout: float) -> list[ToolInfo]:
        async with asyncio.timeout(timeout):
            self.tools = await self._list_tools()
        return self.tools

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> Any:
        """The server's CallToolResult; the sandbox is killed on a deadline or any violation.

        A tools/list_changed the server sent before the result is applied (`tools` listed again) before
        the result is returned, so the caller checks its pins against the list the result came from."""
        if not self.alive:
            raise McpCallError(f"the MCP server {self.decl.name} is not running")
        await self._unwatch()
        self._busy, self._budget, self._idle_bytes = True, self.max_message * 2, 0
        try:
            async with asyncio.timeout(timeout):
                if self.tools_changed:
                    self.tools = await self._list_tools()
                assert self.session is not None
                result = await self.session.call_tool(name, arguments)
                if self.changed_before_result:
                    self.tools = await self._list_tools()
                return result
        except TimeoutError:
            await self.kill(f"no answer within {timeout:g}s")
            raise McpCallError(
                f"no answer within {timeout:g}s; the sandbox was killed", killed=True
            ) from None
        except McpCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - the connection broke under the call
            if self.killed_because is None and self.ceiling is not None and self.ceiling.oom_kills():
                self._violation(self._over_ceiling())
            why = self.killed_because or f"{type(exc).__name__}"
            await self.kill(why)
            raise McpCallError(f"the call failed ({why}); the server was stopped", killed=True) from None
        except BaseException:
            await self.kill("the call was cancelled")
            raise
        finally:
            self._busy = False
            if self.alive and self.proc is not None:
                self._watch = asyncio.create_task(self._watch_idle())

    # ---- memory ---------------------------------------------------------------------------------

    async def _watch_memory(self) -> None:
        """The whole sandbox's memory ceiling, during calls and between them. With a cgroup the kernel
        holds it; a process it killed for that stops the whole server here (cgroup v1 kills only the
        largest process). Without one, the tree's resident memory is summed every MEMORY_EVERY seconds
        and the server killed above the ceiling (each process's RLIMIT_AS bounds what one poll misses)."""
        assert self.proc is not None
        limit = self.settings.memory_ceiling_mb << 20
        while self.proc.returncode is None:
            if self.ceiling is not None:
                if self.ceiling.oom_kills():
                    return self._violation(self._over_ceiling())
            else:
                used = proctree.resident_bytes(self.proc.pid)
                if used is not None and used > limit:
                    return self._violation(
                        f"used {used >> 20} MiB of memory, over its memory ceiling of "
                        f"{self.settings.memory_ceiling_mb} MiB (bot.mcp.memory_ceiling_mb)"
                    )
            await asyncio.sleep(MEMORY_EVERY)

    def _over_ceiling(self) -> str:
        return (
            f"went over its memory ceiling of {self.settings.memory_ceiling_mb} MiB for the whole server "
            "(bot.mcp.memory_ceiling_mb); the kernel stopped it"
        )

    # ---- between calls ------------------------------------------------------------------------

    async def _watch_idle(self) -> None:
        assert self.proc is not None
        started = time.monotonic()
        ticks_per_second = os.sysconf("SC_CLK_TCK")
        window: deque[tuple[float, int]] = deque()
        while self.alive:
            seen = proctree.usage(self.proc.pid)
            now = time.monotonic()
            if seen is None:
                return await self.kill("the server exited between calls")
            extra = seen.pids - self._baseline
            if extra and now - started >= SETTLE:
                return await self.kill(
                    f"processes running between calls that were not there at start: {sorted(extra)[:8]}",
                    audit_kind="mcp.idle_kill",
                )
            window.append((now, seen.cpu_ticks))
            while now - window[0][0] > CPU_WINDOW:
                window.popleft()
            used = (window[-1][1] - window[0][1]) / ticks_per_second
            if used > self.settings.idle_cpu_seconds:
                return await self.kill(
                    f"used {used:.2f}s of CPU between calls (at most "
                    f"{self.settings.idle_cpu_seconds:g}s per {CPU_WINDOW:g}s)",
                    audit_kind="mcp.idle_kill",
                )
            if now - started >= self.settings.idle_timeout:
                return await self.kill(
                    f"no call for {self.settings.idle_timeout:g}s", audit_kind="mcp.idle_stop"
                )
            await asyncio.sleep(WATCH_EVERY)

    async def _unwatch(self) -> None:
        task, self._watch = self._watch, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])

    # ---- stop -----------------------------------------------------------------------------------

    def _kill_now(self) -> None:
        self._doomed = True
        self._closing.set()
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # bwrap's group: the whole pid namespace

    async def kill(self, reason: str, *, audit_kind: str | None = None) -> None:
        if audit_kind is not None:
            self.audit.record(
                audit_kind,
                server=self.decl.name,
                reason=reason,
                stderr=self.stderr_tail[-1000:] if audit_kind == "mcp.idle_kill" else "",
            )
            if audit_kind == "mcp.idle_kill":
                log.warning("MCP server %s killed between calls: %s", self.decl.name, reason)
        self.killed_because = self.killed_because or reason
        self._kill_now()
        if self.proc is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 5)
            transport = getattr(self.proc, "_transport", None)  # close its pipes now, not when collected
            if transport is not None and self.proc.returncode is not None:
                transport.close()
        if self.ceiling is not None:
            for _ in range(100):  # the kernel frees the dead sandbox's processes just after they die
                if self.ceiling.remove():
                    break
                await asyncio.sleep(0.02)
        if self._life is not None and asyncio.current_task() is not self._life:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._life), 5)
        if self.egress is not None:
            await self.egress.close()

    async def close(self) -> None:
        if self._watch is not None and asyncio.current_task() is not self._watch:
            await self._unwatch()
        await self.kill("closed")
