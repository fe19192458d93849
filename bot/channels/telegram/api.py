"""Every outgoing Bot API call, with the rules Telegram enforces on us applied in one place.

- Flood control: a 429 carries `retry_after`; we wait exactly that long and try again (a few
  times), instead of hammering and getting banned for longer.
- Formatting: text is sent as HTML rendered from Markdown; when Telegram rejects the HTML (it
  refuses the whole message over one bad entity) the same text goes out plain, so a reply is
  never lost to formatting.
- Length: 4096 UTF-16 code units after parsing. Chunks are cut by characters, so a chunk full of
  emoji (two units each) is split again here rather than refused.
- Errors never carry the bot token: it is part of every request URL.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from telegram import Bot, InlineKeyboardMarkup, LinkPreviewOptions, Message
from telegram.error import BadRequest, RetryAfter
from telegram.request import HTTPXRequest
from telegram.warnings import PTBDeprecationWarning

from bot.channels.chunking import split_message
from bot.channels.telegram.markup import to_html
from bot.net.tls import client_context
from bot.security.redact import redact

log = logging.getLogger(__name__)

T = TypeVar("T")
LIMIT = 4096
NOT_MODIFIED = "message is not modified"
PARSE_FAILED = "can't parse entities"
# No link previews: a preview makes a link the model wrote look like something the bot vouches for.
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


class _HideTokens(logging.Filter):
    """The token is part of every request URL, which httpx logs at INFO (`owlia start`'s level) and
    the library at DEBUG: a record that names a bot token is rewritten with `<token>` instead."""

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
# Every logger that can see a request URL (a filter applies where the record is made, not to children).
URL_LOGGERS = ("httpx", "telegram.Bot", "telegram.request.BaseRequest", "telegram.request.HTTPXRequest")


def make_bot(token: str, api_base: str | None) -> Bot:
    """A Bot API client for `token`, against `api_base` (a local Bot API server) or Telegram's.

    Two connection pools, as the library sets them up: one connection for the long poll, and a few
    for replies, so a reply never waits behind a poll. Timeouts are generous (the library's 5 s
    lost a poll now and then on a loaded machine; a lost poll is only retried, a lost reply is not)."""
    _HIDE_TOKENS.tokens.add(token)
    for name in URL_LOGGERS:
        logging.getLogger(name).addFilter(_HIDE_TOKENS)  # once: addFilter skips a filter it has
    requests_log = logging.getLogger("httpx")
    if requests_log.level == logging.NOTSET:  # a line per request (every long poll) unless asked for
        requests_log.setLevel(logging.WARNING)
    base = f"{api_base.rstrip('/')}/bot" if api_base else "https://api.telegram.org/bot"
    tls = {"verify": client_context()}  # one CA bundle load for both pools (bot/net/tls.py)
    return Bot(token, base_url=base,
               request=HTTPXRequest(connection_pool_size=8, read_timeout=30.0, write_timeout=15.0,
                                    connect_timeout=15.0, pool_timeout=15.0, httpx_kwargs=tls),
               get_updates_request=HTTPXRequest(connection_pool_size=1, write_timeout=15.0, connect_timeout=15.0,
                                                httpx_kwargs=tls))


def retry_after_s(exc: RetryAfter) -> float:
    """The wait Telegram asked for, in seconds (the library moves from int to timedelta)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _says(exc: BadRequest, words: str) -> bool:
    return words in exc.message.lower()  # the library capitalizes Telegram's description


@dataclass(frozen=True)
class Sent:
    """A message the bot sent: what a later edit needs."""

    chat_id: int
    message_id: int


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def fit(text: str, limit: int = LIMIT) -> list[str]:
    """Pieces of `text` that each fit `limit` UTF-16 units: a char is at most two units, so pieces
    of `limit // 2` chars always fit (code blocks are closed and reopened by split_message)."""
    if utf16_len(text) <= limit:
        return [text]
    return split_message(text, limit // 2)


class TelegramApi:
    def __init__(self, bot: Bot, *, max_retries: int = 5, max_wait: float = 300.0,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.bot = bot
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._sleep = sleep
        self.retries = 0  # 429s honoured (for tests and metrics)

    def scrub(self, exc: BaseException) -> str:
        """An error as text that can be logged: no token, no other secret."""
        return redact(f"{type(exc).__name__}: {exc}".replace(self.bot.token, "<token>"))

    async def close(self) -> None:
        """Close the connection pools (the library opens them on first use)."""
        await self.bot.shutdown()

    async def call(self, name: str, request: Callable[[], Awaitable[T]]) -> T:
        """One API call (`request` makes it afresh each time); a 429 is waited out (`retry_after`
        seconds) up to `max_retries` times."""
        attempt = 0
        while True:
            try:
                return await request()
            except RetryAfter as exc:
                wait = retry_after_s(exc)
                attempt += 1
                if attempt > self.max_retries or wait > self.max_wait:
                    raise
                self.retries += 1
                log.warning("telegram flood control on %s: waiting %ss", name, wait)
                await self._sleep(wait)

    async def send(self, chat_id: int, markdown: str, *, markup: InlineKeyboardMarkup | None = None) -> Sent:
        """Markdown as one or more messages; the handle of the last one."""
        sent: Sent | None = None
        pieces = fit(markdown)
        for index, piece in enumerate(pieces):  # buttons go under the last piece only
            sent = await self.send_html(chat_id, to_html(piece), piece,
                                        markup=markup if index == len(pieces) - 1 else None)
        if sent is None:
            raise ValueError("nothing to send")
        return sent

    async def edit(self, target: Sent, markdown: str, *, markup: InlineKeyboardMarkup | None = None) -> None:
        first, *rest = fit(markdown)
        await self.edit_html(target, to_html(first), first, markup=markup)
        for piece in rest:
            await self.send_html(target.chat_id, to_html(piece), piece)

    async def send_html(self, chat_id: int, html: str, plain: str, *,
                        markup: InlineKeyboardMarkup | None = None) -> Sent:
        try:
            message = await self._send(chat_id, html, "HTML", markup)
        except BadRequest as exc:
            if not _says(exc, PARSE_FAILED):
                raise
            log.info("telegram refused the HTML (%s); sending plain text", self.scrub(exc))
            message = await self._send(chat_id, plain, None, markup)
        return Sent(message.chat.id, message.message_id)

    async def _send(self, chat_id: int, text: str, mode: str | None,
                    markup: InlineKeyboardMarkup | None) -> Message:
        return await self.call("sendMessage", lambda: self.bot.send_message(
            chat_id, text, parse_mode=mode, reply_markup=markup, link_preview_options=NO_PREVIEW))

    async def edit_html(self, target: Sent, html: str, plain: str, *,
                        markup: InlineKeyboardMarkup | None = None) -> None:
        try:
            await self._edit(target, html, "HTML", markup)
        except BadRequest as exc:
            if not _says(exc, PARSE_FAILED):
                raise
            log.info("telegram refused the HTML edit (%s); editing as plain text", self.scrub(exc))
            await self._edit(target, plain, None, markup)

    async def _edit(self, target: Sent, text: str, mode: str | None,
                    markup: InlineKeyboardMarkup | None) -> None:
        try:
            await self.call("editMessageText", lambda: self.bot.edit_message_text(
                text, chat_id=target.chat_id, message_id=target.message_id, parse_mode=mode,
                reply_markup=markup, link_preview_options=NO_PREVIEW))
        except BadRequest as exc:
            if not _says(exc, NOT_MODIFIED):  # an identical edit is not a failure
                raise

    async def typing(self, chat_id: int) -> None:
        await self.call("sendChatAction", lambda: self.bot.send_chat_action(chat_id, "typing"))

    async def answer(self, query_id: str, text: str, *, alert: bool = False) -> None:
        await self.call("answerCallbackQuery",
                        lambda: self.bot.answer_callback_query(query_id, text=text, show_alert=alert))

    async def quietly(self, what: str, call: Awaitable[Any]) -> Any:
        """Run a call whose failure must not stop the reply (a typing ping, a card); log it."""
        try:
            return await call
        except Exception as exc:  # noqa: BLE001 - delivery problems are logged, the run goes on
            log.warning("telegram %s failed: %s", what, self.scrub(exc))
            return None
