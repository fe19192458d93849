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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from bot.channels.chunking import split_message
from bot.channels.telegram.botapi import BadRequest, BotApi, Markup, Message, RetryAfter
from bot.channels.telegram.markup import to_html
from bot.security.redact import redact

log = logging.getLogger(__name__)

T = TypeVar("T")
LIMIT = 4096
NOT_MODIFIED = "message is not modified"
PARSE_FAILED = "can't parse entities"


def make_bot(token: str, api_base: str | None) -> BotApi:
    """A Bot API client for `token`, against `api_base` (a local Bot API server) or Telegram's."""
    return BotApi(token, api_base)


def _says(exc: BadRequest, words: str) -> bool:
    return words in exc.message.lower()


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
    def __init__(
        self,
        bot: BotApi,
        *,
        max_retries: int = 5,
        max_wait: float = 300.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.bot = bot
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._sleep = sleep
        self.retries = 0  # 429s honoured (for tests and metrics)

    def scrub(self, exc: BaseException) -> str:
        """An error as text that can be logged: no token, no other secret."""
        return redact(f"{type(exc).__name__}: {exc}".replace(self.bot.token, "<token>"))

    async def close(self) -> None:
        """Close the connection pools."""
        await self.bot.close()

    async def call(self, name: str, request: Callable[[], Awaitable[T]]) -> T:
        """One API call (`request` makes it afresh each time); a 429 is waited out (`retry_after`
        seconds) up to `max_retries` times."""
        attempt = 0
        while True:
            try:
                return await request()
            except RetryAfter as exc:
                wait = exc.retry_after
                attempt += 1
                if attempt > self.max_retries or wait > self.max_wait:
                    raise
                self.retries += 1
                log.warning("telegram flood control on %s: waiting %ss", name, wait)
                await self._sleep(wait)

    async def send(self, chat_id: int, markdown: str, *, markup: Markup | None = None) -> Sent:
        """Markdown as one or more messages; the handle of the last one."""
        sent: Sent | None = None
        pieces = fit(markdown)
        for index, piece in enumerate(pieces):  # buttons go under the last piece only
            sent = await self.send_html(
                chat_id, to_html(piece), piece, markup=markup if index == len(pieces) - 1 else None
            )
        if sent is None:
            raise ValueError("nothing to send")
        return sent

    async def edit(self, target: Sent, markdown: str, *, markup: Markup | None = None) -> None:
        first, *rest = fit(markdown)
        await self.edit_html(target, to_html(first), first, markup=markup)
        for piece in rest:
            await self.send_html(target.chat_id, to_html(piece), piece)

    async def send_html(self, chat_id: int, html: str, plain: str, *, markup: Markup | None = None) -> Sent:
        try:
            message = await self._send(chat_id, html, "HTML", markup)
        except BadRequest as exc:
            if not _says(exc, PARSE_FAILED):
                raise
            log.info("telegram refused the HTML (%s); sending plain text", self.scrub(exc))
            message = await self._send(chat_id, plain, None, markup)
        return Sent(message.chat.id, message.message_id)

    async def _send(self, chat_id: int, text: str, mode: str | None, markup: Markup | None) -> Message:
        # no link previews: a preview makes a link the model wrote look like something the bot vouches for
        return await self.call(
            "sendMessage",
            lambda: self.bot.send_message(
                chat_id, text, parse_mode=mode, reply_markup=markup, disable_preview=True
            ),
        )

    async def edit_html(self, target: Sent, html: str, plain: str, *, markup: Markup | None = None) -> None:
        try:
            await self._edit(target, html, "HTML", markup)
        except BadRequest as exc:
            if not _says(exc, PARSE_FAILED):
                raise
            log.info("telegram refused the HTML edit (%s); editing as plain text", self.scrub(exc))
            await self._edit(target, plain, None, markup)

    async def _edit(self, target: Sent, text: str, mode: str | None, markup: Markup | None) -> None:
        try:
            await self.call(
                "editMessageText",
                lambda: self.bot.edit_message_text(
                    target.chat_id,
                    target.message_id,
                    text,
                    parse_mode=mode,
                    reply_markup=markup,
                    disable_preview=True,
                ),
            )
        except BadRequest as exc:
            if not _says(exc, NOT_MODIFIED):  # an identical edit is not a failure
                raise

    async def typing(self, chat_id: int) -> None:
        await self.call("sendChatAction", lambda: self.bot.send_chat_action(chat_id, "typing"))

    async def answer(self, query_id: str, text: str, *, alert: bool = False) -> None:
        await self.call(
            "answerCallbackQuery",
            lambda: self.bot.answer_callback_query(query_id, text=text, show_alert=alert),
        )

    async def quietly(self, what: str, call: Awaitable[Any]) -> Any:
        """Run a call whose failure must not stop the reply (a typing ping, a card); log it."""
        try:
            return await call
        except Exception as exc:  # noqa: BLE001 - delivery problems are logged, the run goes on
            log.warning("telegram %s failed: %s", what, self.scrub(exc))
            return None
