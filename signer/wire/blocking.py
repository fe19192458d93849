"""The signer client without an event loop, for a command that sends a request or two and exits.

`owlia sign send` connects, authenticates, signs and prints: an event loop (asyncio, uvloop, and
the `ssl` module asyncio imports) would cost more than the work: through `SignerClient` and
`asyncio.run`, the command took 36 ms more (124 -> 160 ms wall median, 120 -> 155 ms CPU;
bench/cli_bench.py, 20 pairs on a quiet machine; 40-46 ms more CPU in 2 runs of 15 under load). This client moves the same frames
over a plain blocking socket; everything about them (the request frame, the checks on the reply
line, the errors, the reply models) is signer.wire.exchange's, shared with `SignerClient`, whose
calls and error messages it mirrors. One caller, one request at a time: no lock, no pipelining.
"""

from __future__ import annotations

import itertools
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

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
from signer.wire.sign_replies import AuthReply, Reply, SignReply

if TYPE_CHECKING:
    from signer.wire.requests import Intent

__all__ = ["READ_CHUNK", "BlockingSignerClient"]

R = TypeVar("R", bound=Reply)
READ_CHUNK = 1 << 16


class BlockingSignerClient:
    def __init__(self, socket_path: Path, token: str, *, timeout: float = 60.0) -> None:
        self.socket_path = socket_path
        self._token = token
        self.timeout = timeout  # per call (the request sent and its reply read), as SignerClient's
        self._sock: socket.socket | None = None
        self._pending = b""  # bytes read past the last reply's newline
        self._ids = itertools.count(1)
        self.identity: AuthReply | None = None

    def __repr__(self) -> str:
        return f"BlockingSignerClient({str(self.socket_path)!r})"  # never the token

    def __enter__(self) -> BlockingSignerClient:
        self.connect()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(str(self.socket_path))
        except OSError as exc:  # TimeoutError included
            sock.close()
            raise unreachable(self.socket_path, exc) from None
        self._sock = sock
        identity = self._parsed("auth", self._exchange("auth", {"token": self._token}))
        assert isinstance(identity, AuthReply)
        self.identity = identity

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            self._pending = b""

    def call(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        """Call `method`; its result parsed with the method's reply model."""
        if self._sock is None:
            self.connect()
        return self._parsed(method, self._exchange(method, params))

    def call_as(self, model: type[R], method: str, params: dict[str, Any] | None = None) -> R:
        """`call`, for a caller that names the model it expects (typed for mypy)."""
        reply = self.call(method, params)
        if not isinstance(reply, model):
            raise TypeError(f"{method!r} replies with {type(reply).__name__}, not {model.__name__}")
        return reply

    def sign(
        self,
        intent: Intent | dict[str, Any],
        *,
        idempotency_key: str | None = None,
        reason: str | None = None,
        source: str = "agent",
    ) -> SignReply:
        params = sign_params(intent, idempotency_key=idempotency_key, reason=reason, source=source)
        return self.call_as(SignReply, "sign.request", params)

    def _parsed(self, method: str, result: Any) -> Reply:
        try:
            return parsed_result(method, result)
        except SignerReplyError:
            self.close()  # a signer that garbles one reply is not trusted with the next
            raise

    def _exchange(self, method: str, params: dict[str, Any] | None) -> Any:
        sock = self._sock
        assert sock is not None
        req_id = next(self._ids)
        deadline = time.monotonic() + self.timeout
        try:
            sock.settimeout(self.timeout)
            sock.sendall(request_frame(req_id, method, params))
            line = self._readline(sock, deadline)
        except (OSError, ValueError) as exc:  # TimeoutError is an OSError
            self.close()
            raise connection_lost(exc) from None
        try:
            reply = checked_reply(method, req_id, line)
        except SignerError:
            self.close()
            raise
        return reply_result(method, reply)

    def _readline(self, sock: socket.socket, deadline: float) -> bytes:
        """One line, its newline included; what came before the end of the stream if it has none (b"" at
        once). ValueError past `MAX_REPLY_BYTES`, TimeoutError past the deadline: what the async
        client's reader (signer.wire.client._ReplyLines) gives, `StreamReader.readline`'s behaviour."""
        buffer = bytearray(self._pending)
        searched = 0
        while True:
            end = buffer.find(b"\n", searched)
            if end >= 0:
                if end > MAX_REPLY_BYTES:
                    raise ValueError("the reply line is longer than the limit")
                self._pending = bytes(buffer[end + 1 :])
                return bytes(buffer[: end + 1])
            if len(buffer) > MAX_REPLY_BYTES:
                raise ValueError("the reply line is longer than the limit")
            searched = len(buffer)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
            chunk = sock.recv(READ_CHUNK)
            if not chunk:
                self._pending = b""
                return bytes(buffer)
            buffer += chunk
