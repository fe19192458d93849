"""A small, strict Telegram Bot API client on httpx: the few methods and types the channel uses.

Every call is `POST {api_base}/bot{token}/{method}` with a JSON body; the answer is
`{"ok": true, "result": ...}` or `{"ok": false, "error_code", "description", "parameters"}`,
mapped to the errors below. The server is not trusted further than that:
- the answer is read uncompressed (we ask for no encoding and refuse one) up to MAX_BODY bytes, must be UTF-8 JSON nested at most 64 deep (parsed with
  policies.kernel.safejson), an object, and must say `ok`; a redirect is never followed (it would
  carry a request meant for Telegram somewhere else);
- incoming objects are parsed into frozen dataclasses with only the fields the channel reads
  (unknown fields ignored, a wrong type refused with BadUpdate naming the field), so one malformed
  update is skipped and logged, never a crash of the poller;
- the token is in every URL, so no error text carries it (messages are ours, the server's
  description is scrubbed, httpx's exceptions are not chained) and httpx's request log line is
  rewritten by a filter (`<token>`) and off by default.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import httpx

from bot.net.answers import compressed, is_a, read_capped
from bot.net.tls import context_for
from bot.security.redact import redact
from policies.kernel import safejson
from policies.kernel.text import one_line

TELEGRAM = "https://api.telegram.org"
MAX_BODY = 4 << 20  # a full getUpdates batch (100 updates) is far below this
MAX_DESCRIPTION = 300
IDENTITY = {"Accept-Encoding": "identity"}  # answers are small; a compressed one could expand without bound
Markup = dict[str, Any]  # reply_markup as sent: {"inline_keyboard": [[{"text", "callback_data"}]]}


# -- errors --------------------------------------------------------------------------------------


class TelegramError(Exception):
    """A call failed; `message` is safe to log (no token), `code` is Telegram's error_code if any."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class NetworkError(TelegramError):
    """No usable answer: connection, TLS, timeout, a redirect, an oversize or malformed body."""


class BadRequest(TelegramError):
    """400: Telegram refused the request as made (bad HTML, message not modified, chat not found)."""


class Forbidden(TelegramError):
    """403: the bot may not do that (blocked by the user, kicked from the group)."""


class InvalidToken(TelegramError):
    """401/404: the token is not a bot's (404 is Telegram's answer to a malformed one)."""


class RetryAfter(TelegramError):
    """429 flood control: wait `retry_after` seconds before the next call."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message, 429)
        self.retry_after = retry_after


class BadUpdate(ValueError):
    """An incoming object that does not have the shape the Bot API documents."""


# -- incoming types ------------------------------------------------------------------------------


def _field(data: dict[str, Any], name: str, kind: type, *, required: bool = True) -> Any:
    value = data.get(name)
    if value is None:
        if required:
            raise BadUpdate(f"missing field {name!r}")
        return None
    if not is_a(value, kind):  # Telegram never sends a bool where a number belongs
        raise BadUpdate(f"field {name!r} is {type(value).__name__}, not {kind.__name__}")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (a \ud800 escape): no text of ours can hold it
            raise BadUpdate(f"field {name!r} is not Unicode text") from None
    return value


def _object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadUpdate(f"{what} is {type(data).__name__}, not an object")
    return data


@dataclass(frozen=True, slots=True)
class User:
    id: int
    is_bot: bool
    first_name: str
    last_name: str | None = None
    username: str | None = None

    @classmethod
    def parse(cls, data: Any) -> User:
        data = _object(data, "user")
        return cls(
            _field(data, "id", int),
            _field(data, "is_bot", bool),
            _field(data, "first_name", str),
            _field(data, "last_name", str, required=False),
            _field(data, "username", str, required=False),
        )


@dataclass(frozen=True, slots=True)
class Chat:
    id: int
    type: str

    @classmethod
    def parse(cls, data: Any) -> Chat:
        data = _object(data, "chat")
        return cls(_field(data, "id", int), _field(data, "type", str))


FORWARD_FIELDS = (
    "forward_origin",
    "forward_from",
    "forward_from_chat",
    "forward_sender_name",
    "forward_date",
)


@dataclass(frozen=True, slots=True)
class Message:
    message_id: int
    chat: Chat
    from_user: User | None = None
    text: str | None = None
    reply_to_message: Message | None = None
    forwarded: bool = False  # someone else's words: forward_origin (or the older forward_*), or a
    # channel post copied into its discussion group (is_automatic_forward)

    @classmethod
    def parse(cls, data: Any, *, depth: int = 0) -> Message:
        data = _object(data, "message")
        reply = data.get("reply_to_message")
        automatic = _field(data, "is_automatic_forward", bool, required=False)
        return cls(
            _field(data, "message_id", int),
            Chat.parse(data.get("chat")),
            User.parse(data["from"]) if data.get("from") is not None else None,
            _field(data, "text", str, required=False),
            # Telegram nests one level; deeper nesting is dropped, not recursed into
            cls.parse(reply, depth=depth + 1) if reply is not None and depth == 0 else None,
            any(data.get(name) is not None for name in FORWARD_FIELDS) or automatic is True,
        )


@dataclass(frozen=True, slots=True)
class CallbackQuery:
    id: str
    from_user: User
    message: Message | None = None  # None when Telegram no longer has it
    data: str | None = None

    @classmethod
    def parse(cls, data: Any) -> CallbackQuery:
        data = _object(data, "callback_query")
        message = data.get("message")
        return cls(
            _field(data, "id", str),
            User.parse(data.get("from")),
            Message.parse(message) if message is not None else None,
            _field(data, "data", str, required=False),
        )


@dataclass(frozen=True, slots=True)
class Update:
    update_id: int
    message: Message | None = None
    callback_query: CallbackQuery | None = None

    @classmethod
    def parse(cls, data: Any) -> Update:
        data = _object(data, "update")
        message, query = data.get("message"), data.get("callback_query")
        return cls(
            _field(data, "update_id", int),
            Message.parse(message) if message is not None else None,
            CallbackQuery.parse(query) if query is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Batch:
    """One getUpdates answer: the updates that parsed, how many did not, and the next offset (past
    both, so a malformed update is never fetched again)."""

    updates: list[Update]
    skipped: list[str]  # why each malformed one was refused
    next_offset: int | None


def parse_batch(result: Any, offset: int | None) -> Batch:
    if not isinstance(result, list):
        raise NetworkError(f"getUpdates answered {type(result).__name__}, not a list")
    updates: list[Update] = []
    skipped: list[str] = []
    numbered = False
    for item in result:
        update_id = item.get("update_id") if isinstance(item, dict) else None
        if is_a(update_id, int):
            offset, numbered = max(offset or 0, update_id + 1), True
        try:
            updates.append(Update.parse(item))
        except BadUpdate as exc:
            skipped.append(str(exc))
    if result and not numbered:  # nothing to confirm: the same batch would come again at once
        raise NetworkError("getUpdates answered updates without an update_id")
    return Batch(updates, skipped, offset)


# -- the client ----------------------------------------------------------------------------------


class _HideTokens(logging.Filter):
    """httpx logs every request URL at INFO (`owlia start`'s level): a record that names a bot
    token is rewritten with `<token>` instead."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if any(token in message for token in self.tokens):
            for token in self.tokens:
                message = message.replace(token, "<token>")
            record.msg, record.args = message, None
        return True


_HIDE_TOKENS = _HideTokens()
# the only logger that sees a request URL (a filter applies where the record is made, not to children)
URL_LOGGERS = ("httpx",)


class BotApi:
    """The Bot API for one token. Two connection pools: one connection for the long poll, a few for
    replies, so a reply never waits behind a poll. Timeouts are generous (a lost poll is only
    retried, a lost reply is not)."""

    def __init__(self, token: str, api_base: str | None = None, *, max_body: int = MAX_BODY) -> None:
        self.token = token
        self.max_body = max_body
        _HIDE_TOKENS.tokens.add(token)
        for name in URL_LOGGERS:
            logging.getLogger(name).addFilter(_HIDE_TOKENS)  # once: addFilter skips a filter it has
        requests_log = logging.getLogger("httpx")
        if requests_log.level == logging.NOTSET:  # a line per request (every long poll) unless asked for
            requests_log.setLevel(logging.WARNING)
        self._base = f"{(api_base or TELEGRAM).rstrip('/')}/bot{token}/"
        self._client: httpx.AsyncClient | None = None
        self._poll_client: httpx.AsyncClient | None = None
        self._open()

    def _open(self) -> None:
        """The pools (again, after close: a channel that failed is run again with the same client)."""
        # one CA bundle load for both pools, none for a plain-http local Bot API server (bot/net/tls.py)
        tls = context_for(self._base)
        timeout = _timeout(read=30.0)
        if self._client is None or self._client.is_closed:
            self._client = httpx.AsyncClient(
                verify=tls, follow_redirects=False, timeout=timeout, limits=httpx.Limits(max_connections=8)
            )
        if self._poll_client is None or self._poll_client.is_closed:
            self._poll_client = httpx.AsyncClient(
                verify=tls, follow_redirects=False, timeout=timeout, limits=httpx.Limits(max_connections=1)
            )

    def _scrub(self, text: str) -> str:
        return redact(one_line(text.replace(self.token, "<token>"), MAX_DESCRIPTION))

    async def close(self) -> None:
        """Close the pools; the next call opens them again."""
        for client in (self._client, self._poll_client):
            if client is not None:
                await client.aclose()

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
        poll: bool = False,
    ) -> Any:
        """One method; its `result`, or one of the errors above."""
        self._open()
        client = self._poll_client if poll else self._client
        assert client is not None
        timeout = _timeout(read=read_timeout or 30.0)
        try:
            status, body = await self._post(client, method, params or {}, timeout)
        except httpx.HTTPError as exc:  # its message and request carry the URL: not chained
            raise NetworkError(f"{method}: {type(exc).__name__}: {self._scrub(str(exc))}") from None
        return self._result(method, status, body)

    async def _post(
        self, client: httpx.AsyncClient, method: str, params: dict[str, Any], timeout: httpx.Timeout
    ) -> tuple[int, bytes]:
        async with client.stream(
            "POST", self._base + method, json=params, timeout=timeout, headers=IDENTITY
        ) as response:
            if response.is_redirect:
                raise NetworkError(
                    f"{method}: the server answered a redirect ({response.status_code}); not followed"
                )
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_body:
                raise NetworkError(f"{method}: the answer is larger than {self.max_body} bytes")
            if compressed(response):
                raise NetworkError(f"{method}: the answer is compressed, which was not asked for")
            body = await read_capped(response, self.max_body)  # as sent: a compressed bomb is never expanded
            if body is None:
                raise NetworkError(f"{method}: the answer is larger than {self.max_body} bytes")
            return response.status_code, body

    def _result(self, method: str, status: int, body: bytes) -> Any:
        try:
            answer = safejson.loads(body)
        except ValueError:  # not UTF-8, not JSON, or nested too deep
            raise NetworkError(f"{method}: HTTP {status}, the answer is not JSON") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
            raise NetworkError(f"{method}: HTTP {status}, the answer is not a Bot API answer")
        if answer["ok"] is True:
            if status != 200 or "result" not in answer:
                raise NetworkError(f"{method}: HTTP {status}, ok without a result")
            return answer["result"]
        code = answer.get("error_code")
        code = code if is_a(code, int) else status
        description = answer.get("description")
        text = self._scrub(description if isinstance(description, str) else f"error {code}")
        message = f"{method}: {text}"
        if code == 429:
            parameters = answer.get("parameters")
            wait = parameters.get("retry_after") if isinstance(parameters, dict) else None
            if is_a(wait, (int, float)) and math.isfinite(wait) and wait >= 0:
                raise RetryAfter(message, float(wait))
            raise TelegramError(f"{message} (flood control without a usable retry_after)", code)
        kinds = {400: BadRequest, 401: InvalidToken, 403: Forbidden, 404: InvalidToken}
        kind = kinds.get(code, TelegramError)
        raise kind(message, code)

    # -- the methods the channel uses ------------------------------------------------------------

    async def get_me(self) -> User:
        try:
            return User.parse(await self.call("getMe"))
        except BadUpdate as exc:
            raise NetworkError(f"getMe: {exc}") from None

    async def get_updates(self, offset: int | None, timeout: int, allowed_updates: list[str]) -> Batch:
        """A long poll: held open by the server up to `timeout` s (the read timeout allows 15 more)."""
        params: dict[str, Any] = {"timeout": timeout, "allowed_updates": allowed_updates}
        if offset is not None:
            params["offset"] = offset
        result = await self.call("getUpdates", params, read_timeout=timeout + 15.0, poll=True)
        return parse_batch(result, offset)

    async def send_message(
        self,
        chat_id: int,
        text: str,
        *,
        parse_mode: str | None = None,
        reply_markup: Markup | None = None,
        disable_preview: bool = True,
    ) -> Message:
        params: dict[str, Any] = {"chat_id": chat_id, "text": text}
        _options(params, parse_mode, reply_markup, disable_preview)
        try:
            return Message.parse(await self.call("sendMessage", params))
        except BadUpdate as exc:
            raise NetworkError(f"sendMessage: {exc}") from None

    async def edit_message_text(
        self,
        chat_id: int,
        message_id: int,
        text: str,
        *,
        parse_mode: str | None = None,
        reply_markup: Markup | None = None,
        disable_preview: bool = True,
    ) -> None:
        params: dict[str, Any] = {"chat_id": chat_id, "message_id": message_id, "text": text}
        _options(params, parse_mode, reply_markup, disable_preview)
        await self.call("editMessageText", params)

    async def send_chat_action(self, chat_id: int, action: str) -> None:
        await self.call("sendChatAction", {"chat_id": chat_id, "action": action})

    async def answer_callback_query(self, query_id: str, text: str, *, show_alert: bool = False) -> None:
        await self.call(
            "answerCallbackQuery", {"callback_query_id": query_id, "text": text, "show_alert": show_alert}
        )

    async def set_my_commands(self, commands: list[tuple[str, str]]) -> None:
        await self.call(
            "setMyCommands", {"commands": [{"command": c, "description": d} for c, d in commands]}
        )

    async def delete_webhook(self, *, drop_pending_updates: bool = False) -> None:
        await self.call("deleteWebhook", {"drop_pending_updates": drop_pending_updates})

    async def set_webhook(self, url: str, *, secret_token: str, allowed_updates: list[str]) -> None:
        await self.call(
            "setWebhook", {"url": url, "secret_token": secret_token, "allowed_updates": allowed_updates}
        )


def _timeout(*, read: float) -> httpx.Timeout:
    """Generous: a lost poll is only retried, but a lost reply is not."""
    return httpx.Timeout(connect=15.0, read=read, write=15.0, pool=15.0)


def _options(
    params: dict[str, Any], parse_mode: str | None, markup: Markup | None, disable_preview: bool
) -> None:
    if parse_mode is not None:
        params["parse_mode"] = parse_mode
    if markup is not None:
        params["reply_markup"] = markup
    if disable_preview:
        params["link_preview_options"] = {"is_disabled": True}


def inline_keyboard(rows: list[list[tuple[str, str]]]) -> Markup:
    """Buttons as (label, callback_data) rows."""
    return {
        "inline_keyboard": [[{"text": text, "callback_data": data} for text, data in row] for row in rows]
    }
