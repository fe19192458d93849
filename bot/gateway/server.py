"""Running the gateway: bind checks and a small HTTP/1.1 server on asyncio streams.

Loopback is the default and the only place a token-less gateway may listen. Anything else
(including 0.0.0.0, ::, or a hostname we cannot prove is loopback) needs a strong token, and we
check before binding, so a misconfiguration is a startup error rather than an exposed port.

HTTP is parsed by h11 (strict HTTP/1.1: no request smuggling through conflicting lengths, bounded
heads), nothing is logged per request (URLs and headers stay out of logs), no proxy header is
trusted (X-Forwarded-For cannot spoof a client) and no Server header is sent. Limits: a whole request
(head and body) within HEAD_TIMEOUT and MAX_HEAD bytes, no body beyond MAX_BODY (the routes take none), at
most MAX_CONNECTIONS at once (503 beyond: long polls hold a connection for up to 30 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from dataclasses import dataclass, field
from http import HTTPStatus

import h11

from bot.gateway.app import GatewayApp, Reply
from bot.gateway.auth import MIN_TOKEN_LENGTH

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 64
HEAD_TIMEOUT = 10.0  # seconds for a request (or the next one on a kept-alive connection) to arrive
MAX_HEAD = 16 * 1024
MAX_BODY = 64 * 1024
GRACE = 2.0  # on stop, requests in flight get this long; open long polls are then cancelled
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n"
    b"Cache-Control: no-store\r\n\r\n"
)
_SINGLE = ("host", "authorization")  # a second copy of either is a confused or hostile client


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


class _Refused(Exception):
    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


@dataclass
class _Server:
    app: GatewayApp
    listener: asyncio.Server | None = None
    connections: set[asyncio.Task[None]] = field(default_factory=set)
    busy: set[asyncio.Task[None]] = field(default_factory=set)  # handling a request right now

    async def open(self, host: str, port: int) -> int:
        try:
            self.listener = await asyncio.start_server(self._accept, host, port, limit=MAX_HEAD)
        except OSError as exc:
            raise GatewayConfigError(
                f"gateway failed to start on {host}:{port}: {exc.strerror or exc}"
            ) from None
        return int(self.listener.sockets[0].getsockname()[1])

    async def close(self, timeout: float) -> None:
        if self.listener is not None:
            self.listener.close()  # nothing new is accepted from here on
        if self.busy:
            await asyncio.wait(set(self.busy), timeout=min(timeout, GRACE))
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)
        if self.listener is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.listener.wait_closed(), timeout)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            if len(self.connections) >= MAX_CONNECTIONS:
                with contextlib.suppress(TimeoutError):  # take the request first: closing on unread
                    await asyncio.wait_for(reader.read(MAX_HEAD), 1.0)  # data would reset the answer
                writer.write(_BUSY)
                await writer.drain()
                return
            self.connections.add(task)
            await self._serve(reader, writer, task)
        except (ConnectionError, TimeoutError, h11.ProtocolError):
            pass  # the client went away, stalled or broke the protocol: drop the connection
        except asyncio.CancelledError:
            if self.listener is None or self.listener.is_serving():
                raise
            # cancelled by close(): the connection ends here, quietly
        finally:
            self.connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, task: asyncio.Task[None]
    ) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        while True:
            broken = False  # the request was refused before it was understood: answer, then hang up
            method = ""
            try:
                async with asyncio.timeout(HEAD_TIMEOUT):  # the whole request, not each read: a client
                    request = await _next(conn, reader)  # trickling a byte at a time is dropped too
                    if not isinstance(request, h11.Request):
                        return  # closed between requests
                    method = request.method.decode("ascii")
                    headers = _headers(request)
                    await _drain_body(conn, reader)
                self.busy.add(task)
                reply = await self.app.handle(method, request.target.decode("latin-1"), headers)
            except h11.RemoteProtocolError as exc:
                reply, broken = Reply(exc.error_status_hint, b"", "text/plain; charset=utf-8"), True
            except _Refused as refused:
                reply, broken = refused.reply, True
            except (ConnectionError, TimeoutError):
                raise  # the client went away or stalled: _accept drops the connection
            except Exception:  # a bug in a route: 500, logged here (never the request's headers)
                log.exception("control plane request failed")
                reply = Reply.json(500, {"detail": "Internal Server Error"})
            finally:
                self.busy.discard(task)
            if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
                return
            if broken:
                reply = Reply(
                    reply.status, reply.body, reply.content_type, (*reply.headers, ("Connection", "close"))
                )
            await _send(conn, writer, reply, body=method != "HEAD")
            if broken or not _cycle_done(conn):
                return
            conn.start_next_cycle()


def _cycle_done(conn: h11.Connection) -> bool:
    """Both sides finished this request/response, so the connection may carry another one."""
    return conn.our_state is h11.DONE and conn.their_state is h11.DONE


async def _next(conn: h11.Connection, reader: asyncio.StreamReader) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await reader.read(MAX_HEAD))


async def _drain_body(conn: h11.Connection, reader: asyncio.StreamReader) -> None:
    size = 0
    while True:
        event = await _next(conn, reader)
        if isinstance(event, h11.EndOfMessage):
            return
        if isinstance(event, h11.Data):
            size += len(event.data)
            if size > MAX_BODY:
                raise _Refused(Reply.json(413, {"detail": "request body too large"}))
        else:
            raise ConnectionError("the client closed the request early")


def _headers(request: h11.Request) -> dict[str, str]:
    size = len(request.target) + sum(len(name) + len(value) + 4 for name, value in request.headers)
    if size > MAX_HEAD:  # h11 bounds a head still arriving; one that came whole is checked here
        raise _Refused(Reply.json(431, {"detail": "request head too large"}))
    found: dict[str, str] = {}
    for name, value in request.headers:
        key = name.decode("latin-1").lower()
        if key in found and key in _SINGLE:
            raise _Refused(Reply.json(400, {"detail": f"more than one {key} header"}))
        found[key] = value.decode("latin-1")
    if "transfer-encoding" in found and "content-length" in found:
        raise _Refused(Reply.json(400, {"detail": "both Content-Length and Transfer-Encoding"}))
    return found


async def _send(conn: h11.Connection, writer: asyncio.StreamWriter, reply: Reply, *, body: bool) -> None:
    """The reply; `body=False` for HEAD (the head announces the length a GET would get)."""
    try:
        reason = HTTPStatus(reply.status).phrase.encode()
    except ValueError:
        reason = b""
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in reply.all_headers()]
    writer.write(conn.send(h11.Response(status_code=reply.status, headers=headers, reason=reason)) or b"")
    if reply.body and body:
        writer.write(conn.send(h11.Data(data=reply.body)) or b"")
    writer.write(conn.send(h11.EndOfMessage()) or b"")
    await writer.drain()


@dataclass
class RunningGateway:
    host: str
    port: int
    _server: _Server

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish briefly, then cancel the rest."""
        await self._server.close(timeout)


async def start_in_background(
    app: GatewayApp, host: str = "127.0.0.1", port: int = 0, *, token: str | None
) -> RunningGateway:
    """Listen on the running loop and return once bound; `port=0` picks a free port (the bound
    one is on the result). Raises GatewayConfigError if the bind is refused or fails."""
    check_bind(host, token)
    server = _Server(app)
    bound = await server.open(host, port)
    return RunningGateway(host=host, port=bound, _server=server)


async def serve(app: GatewayApp, host: str, port: int, *, token: str | None) -> None:
    """Serve in the foreground until cancelled."""
    running = await start_in_background(app, host, port, token=token)
    try:
        await asyncio.Event().wait()
    finally:
        await running.stop()
