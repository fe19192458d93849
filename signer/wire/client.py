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
from pathlib import Path
from typing import Any, TypeVar

# re-exported (TOKEN_ENV, SignerUnavailable, load_token, ...): callers import them from here
from signer.wire.exchange import (MAX_REPLY_BYTES, TOKEN_ENV, SignerError, SignerReplyError,  # noqa: F401
                                  SignerUnavailable, checked_reply, connection_lost, load_token,
                                  new_idempotency_key, parsed_result, reply_result, sign_params, unreachable)
from signer.wire.protocol import Intent, request_frame
from signer.wire.replies import AuthReply, Reply, SignReply, StatusReply

R = TypeVar("R", bound=Reply)


class SignerClient:
    def __init__(self, socket_path: Path, token: str, *, timeout: float = 60.0) -> None:
        self.socket_path = socket_path
        self._token = token
        self.timeout = timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
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
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(self.socket_path), limit=MAX_REPLY_BYTES), self.timeout
            )
        except (OSError, asyncio.TimeoutError) as exc:
            raise unreachable(self.socket_path, exc) from None
        identity = await self._parsed("auth", await self._call_locked("auth", {"token": self._token}))
        assert isinstance(identity, AuthReply)
        self.identity = identity

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass
            self._writer = None

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Reply:
        """Call `method`; its result parsed with the method's reply model."""
        return await self._parsed(method, await self.call_json(method, params, check=False))

    async def call_as(self, model: type[R], method: str, params: dict[str, Any] | None = None) -> R:
        """`call`, for a caller that names the model it expects (typed for mypy)."""
        reply = await self.call(method, params)
        if not isinstance(reply, model):
            raise TypeError(f"{method!r} replies with {type(reply).__name__}, not {model.__name__}")
        return reply

    async def call_json(self, method: str, params: dict[str, Any] | None = None, *, check: bool = True) -> Any:
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
            assert self._reader is not None and self._writer is not None
            req_id = next(self._ids)
            self._writer.write(request_frame(req_id, method, params))
            try:
                async with asyncio.timeout(self.timeout):  # no extra task per call, unlike wait_for
                    await self._writer.drain()
                    line = await self._reader.readline()
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
