"""The one way into the signer, used by the bot, the CLI and the skills host alike.

Deliberately thin: it frames requests, raises `SignerError` for JSON-RPC errors and parses every
result with its method's reply model (signer.wire.replies): callers get attributes, and a reply
that does not match its model is refused (`SignerReplyError`). Every decision is the daemon's.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import secrets
from pathlib import Path
from typing import Any, TypeVar

from signer.wire.protocol import Intent, request_frame
from signer.wire.replies import AuthReply, Reply, ReplyError, SignReply, StatusReply, parse_reply

TOKEN_ENV = "OWLIA_SIGNER_TOKEN"
MAX_REPLY_BYTES = 4 << 20
R = TypeVar("R", bound=Reply)


class SignerError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class SignerUnavailable(SignerError):
    def __init__(self, message: str) -> None:
        super().__init__(-1, message)


class SignerReplyError(SignerError):
    """The signer's reply does not match its method's model (or is not JSON-RPC at all): refused."""

    def __init__(self, message: str) -> None:
        super().__init__(-2, message)


def new_idempotency_key(prefix: str = "req") -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


def load_token(token_file: Path | None = None) -> str:
    """The client token: `OWLIA_SIGNER_TOKEN`, else a 0600 file. Never from config.yaml."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return token.strip()
    if token_file is None or not token_file.exists():
        raise SignerUnavailable(
            f"no signer token: set {TOKEN_ENV} or write it to {token_file} (0600); "
            "create one with `owlia signer client add NAME --scope sign`"
        )
    mode = token_file.stat().st_mode & 0o777
    if mode & 0o077:
        raise SignerUnavailable(f"{token_file} is readable by others (mode {mode:o}); run `chmod 600 {token_file}`")
    return token_file.read_text(encoding="utf-8").strip()


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
            raise SignerUnavailable(
                f"cannot reach the signer at {self.socket_path} ({type(exc).__name__}); is `owlia signer serve` running?"
            ) from None
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
            return parse_reply(method, result)
        except ReplyError as exc:
            await self.close()  # a signer that garbles one reply is not trusted with the next
            raise SignerReplyError(str(exc)) from None

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
                raise SignerUnavailable(f"lost the signer connection ({type(exc).__name__})") from None
            if not line:
                await self.close()
                raise SignerUnavailable("the signer closed the connection")
            try:
                reply = json.loads(line)
            except ValueError:
                await self.close()
                raise SignerReplyError(f"the signer's reply to {method!r} is not JSON: refused") from None
            # an error to a frame the signer could not read carries no id (JSON-RPC 2.0)
            ids = (req_id, None) if isinstance(reply, dict) and "error" in reply else (req_id,)
            if not isinstance(reply, dict) or reply.get("id") not in ids or ("result" in reply) == ("error" in reply):
                await self.close()
                raise SignerReplyError(f"the signer's reply to {method!r} is not a JSON-RPC reply to it: refused")
            if "error" in reply:
                err = reply["error"]
                if not isinstance(err, dict):
                    raise SignerReplyError(f"the signer's error for {method!r} is malformed: refused")
                raise SignerError(err.get("code", -32603), err.get("message", "error"), err.get("data"))
            return reply["result"]

    # ---- conveniences -----------------------------------------------------------------------

    async def sign(
        self,
        intent: Intent | dict[str, Any],
        *,
        idempotency_key: str | None = None,
        reason: str | None = None,
        source: str = "agent",
    ) -> SignReply:
        body = intent.model_dump(mode="json", exclude_none=True) if isinstance(intent, Intent) else intent
        params: dict[str, Any] = {
            "idempotency_key": idempotency_key or new_idempotency_key(),
            "intent": body,
            "source": source,
        }
        if reason:
            params["reason"] = reason
        return await self.call_as(SignReply, "sign.request", params)

    async def status(self) -> StatusReply:
        return await self.call_as(StatusReply, "status")
