"""A local Telegram Bot API server that the real client (bot/channels/telegram/botapi.py) talks to.

It speaks the wire protocol (POST /bot{token}/{method} with multipart, urlencoded or JSON bodies,
`{"ok": ..., "result" | "error_code", "description", "parameters"}` answers) and keeps the state a
bot can observe: long polling with offsets that really blocks, webhooks with the secret header, the
bot's own messages as they are sent and edited. It is as strict as Telegram where our code could
go wrong: HTML is parsed with Telegram's rules (unknown or unbalanced tags and bare `<`/`&` are
"can't parse entities"), text is limited to 4096 UTF-16 code units after parsing, an edit that
changes nothing is "message is not modified", and an unknown token is 401.

Tests inject updates (a user's message in a private chat or a group, a button press by a given
user, or any raw update), redeliver an update_id, make the next N calls of a method answer 429
with retry_after, make the next call of a method answer raw bytes (a hostile server: oversize,
not JSON, a redirect), and read every call with its timestamp.

    with FakeTelegramServer() as tg:
        bot = BotApi(tg.token, tg.url)
        tg.message(1001, "hi")
        ... tg.calls_of("sendMessage")[0].params["text"]

The server runs in its own thread and event loop, so sync tests, async tests and benchmarks can
all use it; every public method is thread-safe.
"""

from __future__ import annotations

import asyncio
import copy
import html
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

from tests.fakes.loop_thread import LoopThread

TOKEN = "123456:TEST-fake-telegram-token_abcdefghijklmnop"
MAX_TEXT = 4096
JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "allowed_updates",
        "commands",
        "scope",
        "link_preview_options",
        "reply_parameters",
        "entities",
    }
)
TAGS = frozenset(
    {
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "a",
        "code",
        "pre",
        "blockquote",
        "tg-emoji",
    }
)
_ATTRIBUTE = r"""\s+[a-zA-Z-]+(?:\s*=\s*(?:"[^"<]*"|'[^'<]*'|[^\s>"'<]+))?"""
_TAG = re.compile(rf"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:{_ATTRIBUTE})*)\s*>")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#x[0-9a-fA-F]{1,6}|lt|gt|amp|quot);")


class ParseError(ValueError):
    pass


def parse_html(text: str) -> str:
    """The visible text of a Telegram HTML message, or ParseError with Telegram's wording."""
    out: list[str] = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "<":
            match = _TAG.match(text, i)
            if match is None:
                raise ParseError(f"Unexpected end of name token at byte offset {i}")
            closing, name = match.group(1) == "/", match.group(2).lower()
            if name not in TAGS:
                raise ParseError(f'Unsupported start tag "{name}" at byte offset {i}')
            if closing:
                if not stack or stack[-1] != name:
                    raise ParseError(
                        f'Unmatched end tag at byte offset {i}: expected "</{stack[-1]}>", found "</{name}>"'
                        if stack
                        else f"Unexpected end tag at byte offset {i}"
                    )
                stack.pop()
            else:
                if name == "a" and "a" in stack:
                    raise ParseError(f"Nested links are not allowed at byte offset {i}")
                if stack and stack[-1] == "pre" and name != "code":
                    raise ParseError(f'Unsupported tag "{name}" inside pre at byte offset {i}')
                stack.append(name)
            i = match.end()
        elif ch == "&":
            match = _ENTITY.match(text, i)
            if match is None:
                raise ParseError(f"Unsupported HTML entity at byte offset {i}")
            out.append(html.unescape(match.group(0)))
            i = match.end()
        elif ch == ">":
            raise ParseError(f"Unexpected '>' at byte offset {i}")
        else:
            out.append(ch)
            i += 1
    if stack:
        raise ParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class ApiError(Exception):
    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.code, self.description, self.parameters = code, description, parameters


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float  # time.monotonic() when it arrived
    status: int = 200


@dataclass
class StoredMessage:
    """A message the bot sent, as a user would see it now (after edits)."""

    chat_id: int
    message_id: int
    text: str  # visible text
    raw: str  # as sent (HTML source when parse_mode=HTML)
    parse_mode: str | None
    reply_markup: dict[str, Any] | None
    versions: list[str] = field(default_factory=list)  # visible text of every version, oldest first

    def buttons(self) -> list[dict[str, Any]]:
        rows = (self.reply_markup or {}).get("inline_keyboard") or []
        return [button for row in rows for button in row]


@dataclass(frozen=True)
class RawAnswer:
    """An answer as bytes, whatever the protocol says (`chunked`: no Content-Length)."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = False


@dataclass
class _Pending:
    update: dict[str, Any]
    forced: bool = False  # a redelivery: returned whatever the offset


class FakeTelegramServer(LoopThread):
    thread_name = "fake-telegram"

    def __init__(
        self,
        token: str = TOKEN,
        *,
        username: str = "owlia_test_bot",
        bot_id: int = 7000,
        webhook_retry_delay: float = 0.05,
    ) -> None:
        self.token = token
        self.me = {
            "id": bot_id,
            "is_bot": True,
            "first_name": "Owlia",
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.webhook_retry_delay = webhook_retry_delay
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._failures: dict[str, list[ApiError]] = {}
        self._raw: dict[str, list[RawAnswer]] = {}
        self._pending: list[_Pending] = []
        self._log: dict[int, dict[str, Any]] = {}
        self._messages: dict[tuple[int, int], StoredMessage] = {}
        self._chats: dict[int, dict[str, Any]] = {}
        self._update_ids = itertools.count(500_000)
        self._message_ids = itertools.count(1)
        self._callback_ids = itertools.count(9_000_000)
        self.commands: list[dict[str, Any]] = []
        self.webhook: dict[str, Any] | None = None
        self.webhook_deliveries: list[tuple[int, int]] = []  # (update_id, HTTP status)
        self.allowed_updates: list[str] | None = None
        self.answered: dict[str, dict[str, Any]] = {}  # callback_query_id -> answerCallbackQuery params
        super().__init__()
        self._port = 0
        self._wakeup: asyncio.Event | None = None

    # -- life cycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's root: methods are at `{url}/bot{token}/{method}`."""
        return f"http://127.0.0.1:{self._port}"

    async def _main(self) -> None:
        self._wakeup = asyncio.Event()
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/bot{token}/{method}", self._handle)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._client = ClientSession(timeout=ClientTimeout(total=10))
        deliver = asyncio.create_task(self._webhook_pump())
        self._ready.set()
        await self._stopping.wait()
        deliver.cancel()
        await asyncio.gather(deliver, return_exceptions=True)
        await self._client.close()
        await runner.cleanup()

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._loop.call_soon_threadsafe(self._wakeup.set)

    # -- what tests do ---------------------------------------------------------------------------

    def user(self, user_id: int, username: str | None = None) -> dict[str, Any]:
        return {
            "id": user_id,
            "is_bot": False,
            "first_name": f"User{user_id}",
            "username": username or f"user{user_id}",
            "language_code": "en",
        }

    def open_chat(self, user_id: int) -> None:
        """A private chat the user opened earlier (/start), so the bot may message them first."""
        self._chat(user_id, "private", user_id, None)

    def message(
        self,
        user_id: int,
        text: str,
        *,
        chat_id: int | None = None,
        chat_type: str = "private",
        username: str | None = None,
        reply_to: int | None = None,
        forwarded_from: int | None = None,
    ) -> dict[str, Any]:
        """A user's message; `chat_id` (negative) with chat_type "group"/"supergroup" for a group;
        `forwarded_from`: the user forwards a message that user wrote."""
        chat_id = user_id if chat_id is None else chat_id
        chat = self._chat(chat_id, chat_type, user_id, username)
        message: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": chat,
            "from": self.user(user_id, username),
            "text": text,
        }
        entities = _entities(text)
        if entities:
            message["entities"] = entities
        if forwarded_from is not None:
            message["forward_origin"] = {
                "type": "user",
                "date": int(time.time()),
                "sender_user": self.user(forwarded_from),
            }
        if reply_to is not None:
            stored = self.stored(chat_id, reply_to)
            message["reply_to_message"] = self._as_message(stored)
        kind = "channel_post" if chat_type == "channel" else "message"
        if kind == "channel_post":
            message.pop("from")
        return self.inject({kind: message})

    def press(self, user_id: int, chat_id: int, message_id: int, data: str) -> dict[str, Any]:
        """`user_id` presses an inline button with `data` under the bot's message."""
        stored = self.stored(chat_id, message_id)
        query = {
            "id": str(next(self._callback_ids)),
            "from": self.user(user_id),
            "chat_instance": f"ci{chat_id}",
            "message": self._as_message(stored),
            "data": data,
        }
        return self.inject({"callback_query": query})

    def inject(self, body: dict[str, Any]) -> dict[str, Any]:
        update = {"update_id": next(self._update_ids), **body}
        with self._lock:
            self._log[update["update_id"]] = update
            self._pending.append(_Pending(update))
        self._wake()
        return update

    def redeliver(self, update_id: int) -> None:
        """Deliver the same update again (Telegram does, when a bot did not confirm it in time)."""
        with self._lock:
            self._pending.append(_Pending(copy.deepcopy(self._log[update_id]), forced=True))
        self._wake()

    def fail_next(self, method: str, n: int = 1, *, retry_after: int = 1, status: int = 429) -> None:
        """The next `n` calls of `method` answer 429 Too Many Requests with `retry_after` (or, with
        another `status`, a bare error such as 502 Bad Gateway)."""
        error = (
            ApiError(429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after})
            if status == 429
            else ApiError(status, f"Error {status}: scripted failure")
        )
        with self._lock:
            self._failures.setdefault(method, []).extend(error for _ in range(n))

    def answer_raw(self, method: str, answer: RawAnswer) -> None:
        """The next call of `method` gets `answer` as it is (no state changes)."""
        with self._lock:
            self._raw.setdefault(method, []).append(answer)

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def calls_of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and c.status == 200]

    def stored(self, chat_id: int, message_id: int) -> StoredMessage:
        with self._lock:
            return self._messages[(chat_id, message_id)]

    def chat(self, chat_id: int) -> list[StoredMessage]:
        """The bot's messages in a chat, oldest first, as they look now."""
        with self._lock:
            return [m for (c, _), m in sorted(self._messages.items()) if c == chat_id]

    async def until(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Poll `predicate` from a test's own event loop until it is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {predicate}")
            await asyncio.sleep(0.01)

    # -- the API ---------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params = await _params(request)
        call = Call(method, params, time.monotonic())
        with self._lock:
            self._calls.append(call)
        try:
            if request.match_info["token"] != self.token:
                raise ApiError(401, "Unauthorized")
            with self._lock:
                queued = self._failures.get(method)
                failure = queued.pop(0) if queued else None
                raws = self._raw.get(method)
                raw = raws.pop(0) if raws else None
            if raw is not None:
                call.status = raw.status
                return await _send_raw(request, raw)
            if failure is not None:
                raise failure
            handler = getattr(self, f"_api_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found: method not found")
            result = await handler(params)
        except ApiError as exc:
            call.status = exc.code
            body: dict[str, Any] = {"ok": False, "error_code": exc.code, "description": exc.description}
            if exc.parameters:
                body["parameters"] = exc.parameters
            return web.json_response(body, status=exc.code)
        return web.json_response({"ok": True, "result": result})

    async def _api_getMe(self, params: dict[str, Any]) -> Any:  # Bot API method names
        return self.me

    async def _api_getUpdates(self, params: dict[str, Any]) -> Any:
        if self.webhook is not None:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        offset = int(params.get("offset") or 0)
        limit = min(int(params.get("limit") or 100), 100)
        timeout = float(params.get("timeout") or 0)
        if "allowed_updates" in params:
            self.allowed_updates = list(params["allowed_updates"]) or None
        deadline = self._loop.time() + timeout
        assert self._wakeup is not None
        while True:
            with self._lock:
                self._pending = [p for p in self._pending if p.forced or p.update["update_id"] >= offset]
                ready = [p for p in self._pending if self._allowed(p.update)][:limit]
                for p in ready:
                    if p.forced:
                        self._pending.remove(p)
                self._pending = [p for p in self._pending if self._allowed(p.update)]
            remaining = deadline - self._loop.time()
            if ready or remaining <= 0:
                return [p.update for p in ready]
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except TimeoutError:
                pass

    def _allowed(self, update: dict[str, Any]) -> bool:
        kinds = self.allowed_updates or ["message", "edited_message", "channel_post", "callback_query"]
        return any(kind in update for kind in kinds)

    async def _api_setWebhook(self, params: dict[str, Any]) -> Any:
        secret = params.get("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        self.webhook = {"url": params["url"], "secret_token": secret}
        if "allowed_updates" in params:
            self.allowed_updates = list(params["allowed_updates"]) or None
        self._wake()
        return True

    async def _api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook = None
        if str(params.get("drop_pending_updates", "")).lower() == "true":
            with self._lock:
                self._pending.clear()
        return True

    async def _api_setMyCommands(self, params: dict[str, Any]) -> Any:
        self.commands = list(params.get("commands") or [])
        return True

    async def _api_sendChatAction(self, params: dict[str, Any]) -> Any:
        self._chat_id(params)
        return True

    async def _api_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        query_id = str(params.get("callback_query_id", ""))
        if query_id in self.answered:
            raise ApiError(
                400, "Bad Request: query is too old and response timeout expired or query ID is invalid"
            )
        self.answered[query_id] = params
        return True

    async def _api_sendMessage(self, params: dict[str, Any]) -> Any:
        chat_id = self._chat_id(params)
        raw = str(params.get("text", ""))
        mode = params.get("parse_mode")
        visible = _visible(raw, mode)
        stored = StoredMessage(
            chat_id, next(self._message_ids), visible, raw, mode, params.get("reply_markup"), [visible]
        )
        with self._lock:
            self._messages[(chat_id, stored.message_id)] = stored
        return self._as_message(stored)

    async def _api_editMessageText(self, params: dict[str, Any]) -> Any:
        chat_id = self._chat_id(params)
        key = (chat_id, int(params.get("message_id", 0)))
        with self._lock:
            stored = self._messages.get(key)
        if stored is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        raw = str(params.get("text", ""))
        mode = params.get("parse_mode")
        visible = _visible(raw, mode)
        markup = params.get("reply_markup")
        if visible == stored.text and markup == stored.reply_markup:
            raise ApiError(
                400,
                "Bad Request: message is not modified: specified new message content "
                "and reply markup are exactly the same as a current content and reply "
                "markup of the message",
            )
        with self._lock:
            stored.text, stored.raw, stored.parse_mode, stored.reply_markup = visible, raw, mode, markup
            stored.versions.append(visible)
        return self._as_message(stored)

    # -- plumbing --------------------------------------------------------------------------------

    def _chat(self, chat_id: int, chat_type: str, user_id: int, username: str | None) -> dict[str, Any]:
        with self._lock:
            if chat_id not in self._chats:
                if chat_type == "private":
                    self._chats[chat_id] = {
                        "id": chat_id,
                        "type": "private",
                        "first_name": f"User{user_id}",
                        "username": username or f"user{user_id}",
                    }
                else:
                    self._chats[chat_id] = {"id": chat_id, "type": chat_type, "title": f"Chat {chat_id}"}
            return self._chats[chat_id]

    def _chat_id(self, params: dict[str, Any]) -> int:
        try:
            chat_id = int(params["chat_id"])
        except (KeyError, ValueError):
            raise ApiError(400, "Bad Request: chat not found") from None
        with self._lock:
            if chat_id not in self._chats:
                raise ApiError(400, "Bad Request: chat not found")
        return chat_id

    def _as_message(self, stored: StoredMessage) -> dict[str, Any]:
        with self._lock:
            chat = self._chats[stored.chat_id]
        message: dict[str, Any] = {
            "message_id": stored.message_id,
            "date": int(time.time()),
            "chat": chat,
            "from": {k: v for k, v in self.me.items() if k in ("id", "is_bot", "first_name", "username")},
            "text": stored.text,
        }
        if stored.reply_markup:
            message["reply_markup"] = stored.reply_markup
        return message

    async def _webhook_pump(self) -> None:
        """Push pending updates to the webhook, in order, retrying until it answers 2xx."""
        assert self._wakeup is not None
        while True:
            hook = self.webhook
            with self._lock:
                head = self._pending[0] if hook is not None and self._pending else None
            if head is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            secret = hook.get("secret_token")
            headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {}
            try:
                async with self._client.post(hook["url"], json=head.update, headers=headers) as resp:
                    status = resp.status
            except Exception:  # noqa: BLE001 - the bot is down: keep the update, try again
                status = 0
            self.webhook_deliveries.append((head.update["update_id"], status))
            if 200 <= status < 300:
                with self._lock:
                    if head in self._pending:
                        self._pending.remove(head)
            else:
                await asyncio.sleep(self.webhook_retry_delay)


async def _send_raw(request: web.Request, raw: RawAnswer) -> web.StreamResponse:
    if not raw.chunked:
        return web.Response(status=raw.status, body=raw.body, headers=raw.headers)
    response = web.StreamResponse(status=raw.status, headers=raw.headers)
    response.enable_chunked_encoding()
    await response.prepare(request)
    for start in range(0, len(raw.body), 1 << 16):
        try:
            await response.write(raw.body[start : start + (1 << 16)])
        except (ConnectionError, RuntimeError):  # the client hung up (as it should, on an oversize body)
            break
    return response


def _visible(raw: str, mode: Any) -> str:
    if mode is not None and str(mode).upper() == "HTML":
        try:
            visible = parse_html(raw)
        except ParseError as exc:
            raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from None
    elif mode is not None:
        raise ApiError(400, f"Bad Request: unsupported parse_mode {mode!r} in this fake")
    else:
        visible = raw
    visible = visible.strip()  # Telegram trims messages
    if not visible:
        raise ApiError(400, "Bad Request: message text is empty")
    if utf16_len(visible) > MAX_TEXT:
        raise ApiError(400, "Bad Request: message is too long")
    return visible


def _entities(text: str) -> list[dict[str, Any]]:
    found = []
    for match in re.finditer(r"(?<![\w/])(/[a-zA-Z0-9_]{1,32}(?:@\w+)?|@[A-Za-z0-9_]{5,32})", text):
        kind = "bot_command" if match.group(0).startswith("/") else "mention"
        if kind == "bot_command" and match.start() != 0:
            continue
        found.append(
            {"type": kind, "offset": utf16_len(text[: match.start()]), "length": utf16_len(match.group(0))}
        )
    return found


async def _params(request: web.Request) -> dict[str, Any]:
    ctype = request.content_type
    if ctype == "application/json":
        raw: dict[str, Any] = await request.json()
        return dict(raw or {})
    form = await request.post()
    params: dict[str, Any] = {}
    for key, value in form.items():
        text = value if isinstance(value, str) else value.file.read().decode()  # type: ignore[union-attr]
        params[key] = json.loads(text) if key in JSON_FIELDS else text
    return params


__all__ = [
    "TOKEN",
    "Call",
    "FakeTelegramServer",
    "ParseError",
    "RawAnswer",
    "StoredMessage",
    "parse_html",
    "utf16_len",
]
