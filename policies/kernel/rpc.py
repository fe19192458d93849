"""A minimal Ethereum JSON-RPC client over HTTP(S), from the standard library.

The signer needs six RPC methods, not a framework: keeping web3 (and its HTTP stack) out of the
signer's process halves its memory and shrinks what an attacker could reach inside it. Calls run
on a worker thread with one keep-alive connection per chain; they are rare (fees and nonces are
cached), so serializing them costs nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import select
import ssl
import threading
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from policies.kernel import safejson

if TYPE_CHECKING:
    import http.client

MAX_REPLY_BYTES = 16 << 20


class RpcUnreachable(Exception):
    """Transport failure: the node could not be reached or answered garbage."""


class RpcRemoteError(Exception):
    """The node answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class JsonRpcHttp:
    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url}")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # TCP connections opened so far, reconnects included (http.client reopens a keep-alive
        # connection the node closed by itself): a caller that checked who answers (the signer's
        # eth_chainId) checks again when this moves, since a new connection may reach another node.
        self.connects = 0

    def _connection(self) -> http.client.HTTPConnection:
        # Imported on the first call, not with this module: http.client brings the email package,
        # about 0.5 MB an idle signer would hold before it ever talks to a node.
        import http.client  # lazy: 8 ms, 1564 KiB

        if self._conn is None:
            if self._https:
                self._conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=ssl.create_default_context()
                )
            else:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            opened = self._conn.connect

            def counted_connect() -> None:
                opened()
                self.connects += 1

            self._conn.connect = counted_connect  # type: ignore[method-assign]
        return self._conn

    def _post(self, body: bytes, retry: bool) -> bytes:
        import http.client  # lazy: 8 ms, 1612 KiB

        attempts = 2 if retry else 1  # a keep-alive connection the node closed gets one fresh retry
        with self._lock:
            for attempt in range(1, attempts + 1):
                conn = self._connection()
                try:
                    conn.request("POST", self._path, body, {"Content-Type": "application/json"})
                    response = conn.getresponse()
                    data = response.read(MAX_REPLY_BYTES + 1)
                except (OSError, http.client.HTTPException) as exc:
                    conn.close()
                    self._conn = None
                    if attempt == attempts or isinstance(exc, TimeoutError):
                        raise RpcUnreachable(type(exc).__name__) from None
                    continue
                if len(data) > MAX_REPLY_BYTES:
                    conn.close()
                    self._conn = None
                    raise RpcUnreachable("reply too large")
                if response.status != 200 and not data.startswith(b"{"):
                    raise RpcUnreachable(f"HTTP {response.status}")
                return data
        raise RpcUnreachable("unreachable")

    @property
    def open(self) -> bool:
        """A connection is open now: the next call reaches whoever answered the last one. A keep-alive
        socket the node has closed (a restart, a node swapped behind the URL) reads as ready while no
        request is in flight; it is closed here, so the next call is known to reach a new connection."""
        if not self._lock.acquire(blocking=False):  # a call is in flight on it: open, and busy
            conn = self._conn
            return conn is not None and conn.sock is not None
        try:
            conn = self._conn
            if conn is None or conn.sock is None:
                return False
            readable, _, _ = select.select([conn.sock], [], [], 0)
            if readable:  # end of stream, or bytes nobody asked for: either way not the node we asked
                conn.close()
                self._conn = None
                return False
            return True
        finally:
            self._lock.release()

    def call_blocking(self, method: str, params: list[Any], *, retry: bool = True) -> Any:
        """`retry=False` for a call that must not be sent twice: a reset after the node read the
        request would make the second answer (e.g. "already known") describe the first."""
        body = json.dumps(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        ).encode()
        try:
            reply = safejson.loads(self._post(body, retry))
        except ValueError:
            raise RpcUnreachable("the node did not answer JSON") from None
        if not isinstance(reply, dict):
            raise RpcUnreachable("the node answered a non-object")
        error = reply.get("error")
        if error is not None:
            if not isinstance(error, dict):
                raise RpcRemoteError(-32603, str(error)[:300])
            raise RpcRemoteError(
                int(error.get("code", -32603)), str(error.get("message", ""))[:300], error.get("data")
            )
        return reply.get("result")

    async def call(self, method: str, *params: Any, retry: bool = True) -> Any:
        return await asyncio.to_thread(partial(self.call_blocking, method, list(params), retry=retry))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
