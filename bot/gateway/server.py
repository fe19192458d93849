"""Running the gateway: bind checks and a quiet uvicorn server.

Loopback is the default and the only place a token-less gateway may listen. Anything else
(including 0.0.0.0, ::, or a hostname we cannot prove is loopback) needs a strong token, and we
check before binding, so a misconfiguration is a startup error rather than an exposed port.
uvicorn runs with access logs off (URLs and headers stay out of logs), no proxy header trust
(X-Forwarded-For cannot spoof a client) and no Server header.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from bot.gateway.auth import MIN_TOKEN_LENGTH

MAX_CONNECTIONS = 64  # long-polls hold a connection for up to 30 s; cap what they can pile up
STARTUP_TIMEOUT = 10.0


class GatewayConfigError(Exception):
    """The gateway was asked to listen somewhere it must not, or could not start."""


def is_loopback(host: str) -> bool:
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False  # a hostname could resolve anywhere
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind unless a token of at least MIN_TOKEN_LENGTH chars is set."""
    if is_loopback(host):
        return
    if token is None or len(token) < MIN_TOKEN_LENGTH:
        raise GatewayConfigError(
            f"refusing to bind the gateway to non-loopback address {host!r} without a bearer token "
            f"of at least {MIN_TOKEN_LENGTH} characters"
        )


def _config(app: FastAPI, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=False,
        log_level="warning",
        log_config=None,  # leave the bot's logging setup alone
        lifespan="off",
        proxy_headers=False,
        server_header=False,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_graceful_shutdown=2,  # open long-polls are cancelled rather than awaited
    )


async def serve(app: FastAPI, host: str, port: int, *, token: str | None) -> None:
    """Serve in the foreground until uvicorn exits (it handles SIGINT/SIGTERM itself)."""
    check_bind(host, token)
    server = uvicorn.Server(_config(app, host, port))
    try:
        await server.serve()
    except SystemExit as exc:  # uvicorn exits the process on a bind failure; make it an error
        raise GatewayConfigError(f"gateway failed to start on {host}:{port}") from exc


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process that embeds it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # uvicorn >= 0.29
        yield

    def install_signal_handlers(self) -> None:  # older uvicorn
        pass


@dataclass
class RunningGateway:
    host: str
    port: int
    _server: uvicorn.Server
    _task: asyncio.Task[None]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish briefly, then force it."""
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except asyncio.TimeoutError:
            self._server.force_exit = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, GatewayConfigError):
                await self._task


async def start_in_background(
    app: FastAPI, host: str = "127.0.0.1", port: int = 0, *, token: str | None
) -> RunningGateway:
    """Start the gateway as a task on the running loop and return once it is listening.

    `port=0` picks a free port; the bound one is on the result. Raises GatewayConfigError if the
    bind is refused or fails.
    """
    check_bind(host, token)
    server = _EmbeddedServer(_config(app, host, port))

    async def run() -> None:
        try:
            await server.serve()
        except SystemExit as exc:
            raise GatewayConfigError(f"gateway failed to start on {host}:{port}") from exc

    task = asyncio.create_task(run(), name="owlia-gateway")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_TIMEOUT
    while not server.started:  # uvicorn exposes readiness only as a flag
        if task.done():
            task.result()  # re-raise the startup failure
            raise GatewayConfigError("gateway exited during startup")
        if loop.time() > deadline:
            server.should_exit = True
            task.cancel()
            raise GatewayConfigError("gateway did not start in time")
        await asyncio.sleep(0.01)
    sockname = server.servers[0].sockets[0].getsockname()
    return RunningGateway(host=host, port=int(sockname[1]), _server=server, _task=task)
