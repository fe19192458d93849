"""The Unix-socket JSON-RPC server: framing, peer checks, authentication, dispatch.

Hostile input is expected here: a compromised bot can send anything. Every frame is size-capped,
every failure is answered with a JSON-RPC error, and no failure stops the daemon serving others.
"""

from __future__ import annotations

import asyncio
import grp
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from policies.kernel import safejson
from signer.auth import Client, ClientRegistry, peer_uid, uid_allowed
from signer.backlog import Backlog
from signer.socket_probe import SocketPath, probe
from signer.wire.protocol import ErrorCode, RpcError, Scope, error_frame, result_frame
from signer.wire.requests import AuthParams

log = logging.getLogger("owlia.signer.server")
READ_CHUNK = 65536
REFUSE_LINGER = 0.5  # seconds a refused client gets to finish sending before we close
REFUSE_MAX_BYTES = 1 << 20
AUTH_DEADLINE = 5.0  # seconds a connection has to authenticate before it is closed

Handler = Callable[[Client, Any], Awaitable[Any] | Any]


@dataclass(frozen=True, slots=True)
class Method:
    scope: Scope
    params: type[BaseModel] | None
    handler: Handler


class Connection:
    def __init__(self, uid: int) -> None:
        self.uid = uid
        self.client: Client | None = None
        self.authenticated_once = False  # from then on no deadline, even if its token is revoked later


class _AuthTooLate(Exception):
    pass


class SignerServer:
    def __init__(
        self,
        path: Path,
        methods: dict[str, Method],
        registry: ClientRegistry,
        *,
        allowed_uids: list[int],
        max_request_bytes: int,
        max_connections: int,
        socket_group: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.clock = (
            clock  # judges token expiry: the daemon's (signer.clock), which a clock set back cannot rewind
        )
        self.methods = methods
        self.registry = registry
        self.allowed_uids = allowed_uids
        self.max_request_bytes = max_request_bytes
        self.max_connections = max_connections
        self.socket_group = socket_group
        # One user may hold half the connections: a compromised bot (its own uid in a service install)
        # can never leave the bridge delivering a freeze, or an admin revoking its token, without room.
        self.max_per_uid = max(1, max_connections // 2)
        self._connections = 0
        self._by_uid: Counter[int] = Counter()
        self._server: asyncio.AbstractServer | None = None
        self.backlog = Backlog()

    async def start(self) -> None:
        _remove_stale_socket(self.path)
        old_umask = os.umask(0o117)  # the socket is born 0660: no window where others can connect
        try:
            self._server = await asyncio.start_unix_server(self._handle, path=str(self.path))
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o660)
        if self.socket_group:
            os.chown(self.path, -1, grp.getgrnam(self.socket_group).gr_gid)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        self.backlog.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    # ---- per connection ---------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock: socket.socket = writer.get_extra_info("socket")
        try:
            uid = peer_uid(sock)
        except OSError:
            writer.close()
            return
        refusal = self._refusal(uid)
        if refusal is not None:
            writer.write(error_frame(None, RpcError(ErrorCode.FORBIDDEN, refusal)))
            await _refuse(reader, writer)
            return
        self._connections += 1
        self._by_uid[uid] += 1
        conn = Connection(uid)
        fd = sock.fileno()
        self.backlog.add(fd)
        try:
            await self._serve(conn, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections -= 1
            self._by_uid[uid] -= 1
            if not self._by_uid[uid]:
                del self._by_uid[uid]
            self.backlog.remove(fd)
            await _drain_close(writer)

    def sole_connection(self) -> bool:
        """One connection open (the caller's own): no other client can have a request waiting."""
        return self._connections == 1

    def _refusal(self, uid: int) -> str | None:
        if not uid_allowed(uid, self.allowed_uids):
            return "this user may not use the signer"
        if self._connections >= self.max_connections:
            return "too many connections"
        if self._by_uid[uid] >= self.max_per_uid:
            return f"too many connections from this user (at most {self.max_per_uid})"
        return None

    async def _read(self, conn: Connection, reader: asyncio.StreamReader, deadline: float) -> bytes:
        """The next chunk; until the connection has authenticated, only until `deadline`."""
        if conn.authenticated_once:
            return await reader.read(READ_CHUNK)
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            return await asyncio.wait_for(reader.read(READ_CHUNK), max(remaining, 0.0))
        except TimeoutError:
            raise _AuthTooLate from None

    async def _serve(
        self, conn: Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        buf = bytearray()
        discarding = False
        deadline = asyncio.get_running_loop().time() + AUTH_DEADLINE
        while True:
            try:
                chunk = await self._read(conn, reader, deadline)
            except _AuthTooLate:
                writer.write(
                    error_frame(
                        None,
                        RpcError(
                            ErrorCode.UNAUTHENTICATED,
                            f"authenticate within {AUTH_DEADLINE:g} s of connecting",
                        ),
                    )
                )
                return
            if not chunk:
                return
            buf += chunk
            while True:
                newline = buf.find(b"\n")
                if newline < 0:
                    if len(buf) > self.max_request_bytes:
                        if not discarding:
                            writer.write(error_frame(None, _too_large(self.max_request_bytes)))
                        discarding = True
                        buf.clear()
                    break
                line = bytes(buf[:newline])
                del buf[: newline + 1]
                if discarding:
                    discarding = False  # the tail of an oversized frame: already answered
                    continue
                if len(line) > self.max_request_bytes:
                    writer.write(error_frame(None, _too_large(self.max_request_bytes)))
                    continue
                if line.strip():
                    writer.write(await self._respond(conn, line))
                    await writer.drain()
                    if b"\n" in buf:  # pipelined frames: let other connections have a turn between them
                        await asyncio.sleep(0)

    async def _respond(self, conn: Connection, line: bytes) -> bytes:
        try:
            frame = safejson.loads(line, strict=True)  # NaN, Infinity and lone surrogates are not JSON
        except (ValueError, UnicodeDecodeError, RecursionError):  # a nesting bomb: TooDeep, a ValueError
            return error_frame(None, RpcError(ErrorCode.PARSE, "not valid JSON"))
        req_id = frame.get("id") if isinstance(frame, dict) else None
        if isinstance(frame, dict) and "id" in frame and not _valid_id(req_id):
            # Answered with id null and never executed: the caller could not match a reply to it.
            return error_frame(
                None,
                RpcError(
                    ErrorCode.INVALID_REQUEST,
                    f"id must be a string (at most {MAX_ID_CHARS} characters) or an integer "
                    f"of magnitude below 2**53, not {type(req_id).__name__ if req_id is not None else 'null'}",
                ),
            )
        try:
            reply = result_frame(req_id, await self._dispatch(conn, frame))
        except RpcError as exc:
            return error_frame(req_id, exc)
        except Exception:  # noqa: BLE001 - never let one request take the daemon down
            log.exception("internal error handling a request")
            return error_frame(req_id, RpcError(ErrorCode.INTERNAL, "internal error; see the signer log"))
        return reply

    async def _dispatch(self, conn: Connection, frame: Any) -> Any:
        if isinstance(frame, list):
            raise RpcError(ErrorCode.INVALID_REQUEST, "batches are not supported: send one request per line")
        if (
            not isinstance(frame, dict)
            or frame.get("jsonrpc") != "2.0"
            or not isinstance(frame.get("method"), str)
        ):
            raise RpcError(ErrorCode.INVALID_REQUEST, "expected a JSON-RPC 2.0 request object with a method")
        if "id" not in frame:
            raise RpcError(
                ErrorCode.INVALID_REQUEST, "notifications are not supported: give every request an id"
            )
        params = frame.get("params", {})
        if not isinstance(params, dict):
            raise RpcError(ErrorCode.INVALID_PARAMS, "params must be an object")
        method = frame["method"]
        now = self.clock()
        if method == "auth":
            token = _validate(AuthParams, params).token
            conn.client = self.registry.authenticate(token, now)
            conn.authenticated_once = True
            return {"client": conn.client.name, "scope": conn.client.scope.value}
        if conn.client is None:
            raise RpcError(
                ErrorCode.UNAUTHENTICATED, "authenticate first: call `auth` with your client token"
            )
        if not self.registry.still_active(conn.client.client_id, now):
            conn.client = None
            raise RpcError(ErrorCode.UNAUTHENTICATED, "this client's token was revoked or has expired")
        spec = self.methods.get(method)
        if spec is None:
            raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"no method {method[:64]!r}")
        if not conn.client.allows(spec.scope):
            raise RpcError(
                ErrorCode.FORBIDDEN,
                f"{method} needs the {spec.scope.value!r} scope; this client has {conn.client.scope.value!r}",
            )
        args = _validate(spec.params, params) if spec.params else None
        result = spec.handler(conn.client, args)
        if asyncio.iscoroutine(result):
            result = await result
        return result


MAX_ID_CHARS = 128
_MAX_INT_ID = 2**53  # what every JSON peer (JavaScript included) reads back as the same number


def _valid_id(req_id: Any) -> bool:
    """JSON-RPC 2.0 ids are strings or integers; floats, booleans, objects, arrays and null are refused."""
    if isinstance(req_id, bool):
        return False
    if isinstance(req_id, int):
        return -_MAX_INT_ID < req_id < _MAX_INT_ID
    return isinstance(req_id, str) and len(req_id) <= MAX_ID_CHARS


def _validate(model: type[BaseModel], params: dict[str, Any]) -> Any:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = [
            {"field": ".".join(str(p) for p in e["loc"]) or "(params)", "problem": e["msg"]}
            for e in exc.errors()
        ][:10]
        summary = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        raise RpcError(
            ErrorCode.INVALID_PARAMS, f"invalid params: {summary}"[:500], {"problems": problems}
        ) from None


def _too_large(limit: int) -> RpcError:
    return RpcError(ErrorCode.TOO_LARGE, f"request too large: frames are limited to {limit} bytes")


def _remove_stale_socket(path: Path) -> None:
    """Replace a socket left by a dead daemon, but never a live one nor a non-socket file."""
    found = probe(path)
    if found is SocketPath.NOT_A_SOCKET:
        raise RuntimeError(f"{path} exists and is not a socket; refusing to replace it")
    if found is SocketPath.LIVE:
        raise RuntimeError(f"another signer is already listening on {path}")
    if found is SocketPath.STALE:
        path.unlink()


async def _refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Send the refusal, then swallow (a bounded amount of) what the client already sent: closing a
    socket with unread data resets the connection, and the client would see a reset, not the reason."""
    try:
        await writer.drain()
        writer.write_eof()
        swallowed = 0
        async with asyncio.timeout(REFUSE_LINGER):
            while swallowed < REFUSE_MAX_BYTES and (chunk := await reader.read(READ_CHUNK)):
                swallowed += len(chunk)
    except (TimeoutError, ConnectionError, OSError):
        pass
    await _drain_close(writer)


async def _drain_close(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.drain()
        writer.close()
        await writer.wait_closed()
    except (ConnectionError, OSError):
        pass
