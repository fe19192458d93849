"""The one way into the signer, used by the bot, the CLI and the skills host alike.

Deliberately thin: it frames requests, raises `SignerError` for JSON-RPC errors and parses every
result with its method's reply model (signer.wire.replies): callers get attributes, and a reply
that does not match its model is refused (`SignerReplyError`). Every decision is the daemon's.
The checks on a reply are signer.wire.exchange's, shared with the blocking client
(signer.wire.blocking) that a one-shot command uses without an event loop.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from pathlib import Path
from typing import Any, TypeVar, cast

from signer.wire.exchange import (
    MAX_REPLY_BYTES,
    SignerError,
    SignerReplyError,
    checked_reply,
    connection_lost,
    parsed_result,
    reply_result,
    sign_params,
    unreachable,
)
from signer.wire.protocol import request_frame
from signer.wire.replies import StatusReply
from signer.wire.requests import Intent
from signer.wire.sign_replies import AuthReply, Reply, SignReply

__all__ = ["MAX_QUEUED", "SignerClient"]

R = TypeVar("R", bound=Reply)


MAX_QUEUED = 2 * MAX_REPLY_BYTES  # read but not yet asked for; asyncio's StreamReader pauses at the same size


class _ReplyLines(asyncio.Protocol):
    """The connection's reply lines, in the order they came, each read by one `next_line`.

    A protocol rather than asyncio's StreamReader/StreamWriter pair: a request then costs one write
    and one future, with no readline coroutine, drain or `asyncio.timeout` around them. What a caller
    sees is `StreamReader.readline`'s (and the blocking client's, signer.wire.blocking): a line with
    its newline; what came before the end of the stream if it has none, then b""; ValueError for a
    line longer than `MAX_REPLY_BYTES`; the socket's error if it broke; TimeoutError when no line
    came in time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._searched = 0  # the buffer before this holds no newline: a long line is scanned once
        self._lines: deque[bytes] = deque()
        self._queued = 0  # bytes in `_lines`: past MAX_QUEUED, reading pauses until the caller takes some
        self._paused = False
        self._failure: BaseException | None = None  # an overlong line, or the error that broke the socket
        self._ended = False  # the signer closed its side
        self._waiter: asyncio.Future[None] | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()  # the socket is closed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while (end := buffer.find(b"\n", self._searched)) >= 0:
            if end > MAX_REPLY_BYTES:
                self._fail(ValueError("the reply line is longer than the limit"))
                return
            self._lines.append(bytes(buffer[: end + 1]))
            self._queued += end + 1
            del buffer[: end + 1]
            self._searched = 0
        self._searched = len(buffer)
        if len(buffer) > MAX_REPLY_BYTES:
            self._fail(ValueError("the reply line is longer than the limit"))
            return
        if self._queued > MAX_QUEUED and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()  # lines nobody asked for fill the socket's buffer, not memory
        if self._lines:
            self._wake()

    def eof_received(self) -> None:
        self._ended = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and self._failure is None:
            self._failure = exc
        self._ended = True
        self._wake()
        if not self.closed.done():
            self.closed.set_result(None)

    def _fail(self, exc: BaseException) -> None:
        self._failure = exc
        self._buffer.clear()
        assert self.transport is not None
        self.transport.close()  # nothing after an overlong line can be framed
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def send(self, frame: bytes) -> None:
        if self.transport is None or self.transport.is_closing() or self._ended:
            raise ConnectionResetError("the connection is closed")
        self.transport.write(frame)  # buffered by the transport if the socket is full: the reply waits anyway

    async def next_line(self, timeout: float) -> bytes:
        if not self._lines and self._failure is None and not self._ended:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while not self._lines and self._failure is None and not self._ended:  # a line, the end, a failure
                waiter = self._waiter = loop.create_future()
                timer = loop.call_at(deadline, _expire, waiter)
                try:
                    await waiter
                finally:
                    timer.cancel()
                    self._waiter = None
        if self._lines:
            line = self._lines.popleft()
            self._queued -= len(line)
            if self._paused and self._queued <= MAX_QUEUED and self.transport is not None:
                self._paused = False
                if not self.transport.is_closing():
                    self.transport.resume_reading()
            return line
        if self._failure is not None:
            raise self._failure
        partial = bytes(self._buffer)  # the end of the stream: what came without a newline, then b""
        self._buffer.clear()
        self._searched = 0
        return partial


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class SignerClient:
    def __init__(self, socket_path: Path, token: str, *, timeout: float = 60.0) -> None:
        self.socket_path = socket_path
        self._token = token
        self.timeout = timeout
        self._writer: asyncio.Transport | None = None  # the connection; None once closed
        self._replies: _ReplyLines | None = None
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.identity: AuthReply | None = None

    def __repr__(self) -> str:
        return f"SignerClient({str(self.socket_path)!r})"  # never the token

    async def __aenter__(self) -> SignerClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._writer, self._replies = await asyncio.wait_for(
                loop.create_unix_connection(_ReplyLines, str(self.socket_path)), self.timeout
            )
        except (OSError, asyncio.TimeoutError) as exc:
            raise unreachable(self.socket_path, exc) from None
        identity = await self._parsed("auth", await self._call_locked("auth", {"token": self._token}))
        assert isinstance(identity, AuthReply)
        self.identity = identity

    async def close(self) -> None:
        writer, replies = self._writer, self._replies
        self._writer = self._replies = None
        if writer is not None and replies is not None:
            writer.close()
            await replies.closed  # the socket is closed when this returns, as after StreamWriter.wait_closed

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        """Call `method`; its result parsed with the method's reply model."""
        if self._writer is None:
            await self.connect()
        result = await self._call_locked(method, params)
        try:
            return parsed_result(method, result)  # the hot path: no coroutine layer per step
        except SignerReplyError:
            await self.close()  # a signer that garbles one reply is not trusted with the next
            raise

    async def call_as(self, model: type[R], method: str, params: dict[str, Any] | None = None) -> R:
        """`call`, for a caller that names the model it expects (typed for mypy)."""
        reply = await self.call(method, params)
        if not isinstance(reply, model):
            raise TypeError(f"{method!r} replies with {type(reply).__name__}, not {model.__name__}")
        return reply

    async def call_json(
        self, method: str, params: dict[str, Any] | None = None, *, check: bool = True
    ) -> Any:
        """The result as JSON, for the JSON boundaries (`--json` output, relays); still checked
        against the method's reply model unless `check` is off."""
        if self._writer is None:
            await self.connect()
        result = await self._call_locked(method, params)
        if check:
            await self._parsed(method, result)
        return result

    async def _parsed(self, method: str, result: Any) -> Reply:
        try:
            return parsed_result(method, result)
        except SignerReplyError:
            await self.close()  # a signer that garbles one reply is not trusted with the next
            raise

    async def _call_locked(self, method: str, params: dict[str, Any] | None) -> Any:
        async with self._lock:
            replies = self._replies
            assert replies is not None
            req_id = next(self._ids)
            try:
                replies.send(request_frame(req_id, method, params))
                line = await replies.next_line(self.timeout)
            except (OSError, TimeoutError, ValueError) as exc:
                await self.close()
                raise connection_lost(exc) from None
            try:
                reply = checked_reply(method, req_id, line)
            except SignerError:
                await self.close()
                raise
            return reply_result(method, reply)

    # ---- conveniences -----------------------------------------------------------------------

    async def sign(
        self,
        intent: Intent | dict[str, Any],
        *,
        idempotency_key: str | None = None,
        reason: str | None = None,
        source: str = "agent",
    ) -> SignReply:
        params = sign_params(intent, idempotency_key=idempotency_key, reason=reason, source=source)
        return await self.call_as(SignReply, "sign.request", params)

    async def status(self) -> StatusReply:
        return await self.call_as(StatusReply, "status")
