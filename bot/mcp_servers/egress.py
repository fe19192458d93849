"""The only way out of an MCP server's sandbox: a CONNECT proxy of the bot's on a Unix socket that
is bound into that one sandbox (launch.py relays 127.0.0.1:3128 inside the sandbox to it).

Each tunnel is checked the way a skill's `core.fetch` is (bot/skills/capabilities.py): the host
must be one the user allowed for this server (exact or `*.domain`), never a literal IP or a cloud
metadata name, the port 80 or 443, and the name is resolved by the bot and refused if any address
is not public (SSRF rules of bot/net/ssrf.py, never the private networks or ports the user opened
for the bot's own tools); the tunnel then goes to exactly the address that was checked (no second
resolution inside the sandbox). Only CONNECT is spoken: a plain-HTTP request in absolute form is
refused, so nothing the server sends is parsed beyond the request line. Every tunnel is audited.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot.net.fetch import PinnedResolver, system_resolve
from bot.net.ssrf import (
    FetchError,
    FetchPolicy,
    _host_matches,
    _literal_ip,
    _normalize_host,
    blocked_host_reason,
)
from bot.observability.audit import BotAudit
from bot.skills.capabilities import skill_fetch_policy

HEAD_LIMIT = 8192
HEAD_TIMEOUT = 10.0
CONNECT_TIMEOUT = 10.0
TUNNEL_BYTES = 64 << 20
"""Per tunnel, both directions together; a tunnel over it is cut."""
MAX_TUNNELS = 16
Opener = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


async def _open(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(host, port)


class Egress:
    def __init__(
        self,
        server: str,
        hosts: tuple[str, ...],
        audit: BotAudit,
        policy: FetchPolicy,
        *,
        resolve=None,
        opener: Opener | None = None,
    ) -> None:
        self.server = server
        self.hosts = hosts
        self.audit = audit
        self.policy = skill_fetch_policy(policy, hosts)
        self._resolve = resolve
        self._open = opener or _open
        self._dir: Path | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tunnels: set[asyncio.Task] = set()

    @property
    def socket_path(self) -> Path:
        assert self._dir is not None
        return self._dir / "egress.sock"

    async def start(self) -> Path:
        self._dir = Path(tempfile.mkdtemp(prefix="owlia-egress-"))
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket_path))
        self.socket_path.chmod(0o666)  # the sandbox user connects; only that sandbox has it mounted
        self._dir.chmod(0o711)
        return self.socket_path

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tunnels):
            task.cancel()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tunnels.add(task)
        host, port = "", 0
        try:
            if len(self._tunnels) > MAX_TUNNELS:
                raise FetchError(f"more than {MAX_TUNNELS} tunnels at once")
            async with asyncio.timeout(HEAD_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            host, port = self._target(head)
            address = await self._check(host, port)
            async with asyncio.timeout(CONNECT_TIMEOUT):
                up_reader, up_writer = await self._open(address, port)
        except (
            FetchError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            OSError,
            ValueError,
        ) as exc:
            why = str(exc) if isinstance(exc, FetchError) else type(exc).__name__
            self.audit.record(
                "mcp.egress",
                server=self.server,
                host=host[:253],
                port=port,
                outcome="refused",
                reason=why[:300],
            )
            with contextlib.suppress(OSError):
                writer.write(
                    f"HTTP/1.1 403 Forbidden\r\nX-Owlia-Reason: {why[:200]}\r\n\r\n".encode(
                        "ascii", "replace"
                    )
                )
                await writer.drain()
            writer.close()
            self._tunnels.discard(task)
            return
        self.audit.record(
            "mcp.egress", server=self.server, host=host, port=port, address=address, outcome="open"
        )
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        budget = [TUNNEL_BYTES]
        try:
            await asyncio.gather(self._pipe(reader, up_writer, budget), self._pipe(up_reader, writer, budget))
        finally:
            for end in (writer, up_writer):
                end.close()
            self._tunnels.discard(task)

    @staticmethod
    def _target(head: bytes) -> tuple[str, int]:
        if len(head) > HEAD_LIMIT:
            raise FetchError("request head too long")
        line = head.split(b"\r\n", 1)[0].decode("ascii", "strict")
        method, _, rest = line.partition(" ")
        if method != "CONNECT":
            raise FetchError("only CONNECT tunnels are allowed (use https)")
        authority = rest.split(" ", 1)[0]
        host, _, port = authority.rpartition(":")
        if not host or not port.isdigit():
            raise FetchError("CONNECT needs host:port")
        return _normalize_host(host.strip("[]")), int(port)

    async def _check(self, host: str, port: int) -> str:
        if port not in self.policy.allowed_ports:
            raise FetchError(f"{host}: port {port} is not allowed (80 and 443 only)")
        if _literal_ip(host) is not None:
            raise FetchError(f"{host}: a literal IP address is never an allowed host")
        reason = blocked_host_reason(host)
        if reason:
            raise FetchError(f"{host}: {reason}")
        if not _host_matches(host, self.hosts):
            raise FetchError(f"{host}: not a host the user allowed for this server")
        results = await PinnedResolver(self.policy, self._resolve or system_resolve).resolve(
            host, port, socket.AF_UNSPEC
        )
        return str(results[0]["host"])

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, budget: list[int]) -> None:
        with contextlib.suppress(OSError):
            while chunk := await source.read(65536):
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    return
                sink.write(chunk)
                await sink.drain()
        with contextlib.suppress(OSError):
            sink.close()
