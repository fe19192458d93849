"""The Telegram channel: updates in (long polling or a webhook), replies out, through BotCore.

The client is our own (bot/channels/telegram/botapi.py, the Bot API on httpx) and so is the loop
over getUpdates, because the channel needs three things a dispatcher hides:
every update is handled once (update_ids not yet confirmed are remembered, dedupe.py; the core
also drops a redelivered message_id across restarts), one message at a time per chat (a FIFO lock
per chat, with /cancel going around it so it can stop the run that holds it), and a clean shutdown
(stop polling, let running replies finish for a grace period, then cancel them, which declines any
open confirmation). Polling errors back off and never end the loop; a rejected token does. A
malformed update is skipped (and logged), never fetched again.
The offset is confirmed only by the next poll, so updates in flight when the process dies come
again after a restart (at least once); the core drops the messages it already handled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from bot.channels.access import AccessStore, Gatekeeper
from bot.channels.base import Inbound, drain
from bot.channels.chunking import split_message
from bot.channels.telegram.api import LIMIT, TelegramApi, make_bot
from bot.channels.telegram.botapi import InvalidToken, TelegramError, Update
from bot.channels.telegram.buttons import Confirmations
from bot.channels.telegram.dedupe import SeenUpdates
from bot.channels.telegram.markup import escape
from bot.channels.telegram.routing import ALLOWED_UPDATES, CHANNEL, Router
from bot.config import TelegramSettings

if TYPE_CHECKING:
    from bot.channels.core import BotCore
    from bot.channels.telegram.sink import TelegramSink

log = logging.getLogger(__name__)

MENU = (
    ("start", "Start and help"),
    ("help", "What I can do"),
    ("new", "Start a fresh conversation"),
    ("status", "Model, tokens, signer and chain"),
    ("model", "The model profiles in use"),
    ("balance", "Wallet balance"),
    ("approvals", "Requests waiting for your companion app"),
    ("details", "The ids and rules behind the last signing request"),
    ("cancel", "Stop the running request"),
)
SEEN_UPDATES = 10_000  # update_ids remembered for dedupe by a webhook (polling keeps one batch)
MAX_QUEUED = 20  # messages per chat, the running one included; more are dropped
OVERFLOW_NOTE = (
    f"{MAX_QUEUED} of your messages are already waiting, so I dropped the ones after them. "
    "Send those again once I have answered."
)
FAILED = "Something went wrong on my side; nothing more was done. Try again, or /status."


def explorer_links(chains: Iterable[Any]) -> dict[int, str]:
    """Chain id -> explorer tx URL template, from the `chains:` config."""
    return {c.id: c.explorer_tx_url for c in chains if getattr(c, "explorer_tx_url", None)}


class TelegramChannel:
    name = CHANNEL

    def __init__(
        self,
        core: BotCore,
        settings: TelegramSettings,
        token: str,
        access: AccessStore,
        *,
        explorers: Mapping[int, str] | None = None,
        poll_timeout: int = 25,
        typing_interval: float = 4.0,
        hold: float = 0.3,
        shutdown_grace: float = 10.0,
        max_backoff: float = 30.0,
    ) -> None:
        self.core = core
        self.settings = settings
        self.bot = make_bot(token, settings.api_base)
        self.api = TelegramApi(self.bot)
        self.gate = Gatekeeper(access, CHANNEL, settings.allow_from)
        self.confirmations = Confirmations(self.api)
        self.explorers = dict(explorers or {})
        self.poll_timeout = poll_timeout
        self.typing_interval = typing_interval
        self.hold = hold
        self.shutdown_grace = shutdown_grace
        self.max_backoff = max_backoff
        self.router: Router | None = None
        self._seen = SeenUpdates(SEEN_UPDATES)
        self._chat_locks: dict[int, asyncio.Lock] = {}
        self._queued: dict[int, int] = {}
        self._overflow_told: set[int] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.ready = asyncio.Event()

    # -- life cycle ------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Connect, serve until `stop` is set, then close cleanly."""
        try:
            await self._connect()
            if self.settings.mode == "webhook":
                from bot.channels.telegram.webhook import (  # lazy: 124 ms, 10924 KiB
                    WebhookServer,  # aiohttp's server: webhook mode only
                )

                server = WebhookServer(self, self.settings)
                await server.start()
                try:
                    self.ready.set()
                    await stop.wait()
                finally:
                    await server.stop()
            else:
                self.ready.set()
                await self._poll_until(stop)
            await drain(self._tasks, self.shutdown_grace)
        finally:
            await self.api.close()

    async def _connect(self) -> None:
        """getMe (the token works; the router needs the bot's name) and, for polling, deleteWebhook,
        at once; the command menu in the background: one round trip to Telegram before ready, not three."""
        menu = asyncio.ensure_future(
            self.api.quietly(
                "setMyCommands", self.api.call("setMyCommands", lambda: self.bot.set_my_commands(list(MENU)))
            )
        )
        get_me = asyncio.ensure_future(self.api.call("getMe", self.bot.get_me))
        calls: list[asyncio.Future[Any]] = [get_me]
        if self.settings.mode != "webhook":
            calls.append(
                asyncio.ensure_future(
                    self.api.call(
                        "deleteWebhook", lambda: self.bot.delete_webhook(drop_pending_updates=False)
                    )
                )
            )
        try:
            await asyncio.gather(*calls)
        except BaseException:  # one failed (a refused token, the network): nothing is left running
            calls.append(menu)
            raise
        finally:
            for call in calls:
                call.cancel()  # a no-op on those done
            await asyncio.gather(*calls, return_exceptions=True)
        self._tasks.add(menu)  # drained at shutdown like a reply
        menu.add_done_callback(self._tasks.discard)
        self.router = Router(self.settings, self.gate, get_me.result())

    async def _poll_until(self, stop: asyncio.Event) -> None:
        poller = asyncio.create_task(self._poll())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({poller, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for task in (poller, stopped):
            task.cancel()
        await asyncio.gather(poller, stopped, return_exceptions=True)
        if poller.done() and not poller.cancelled() and poller.exception() is not None:
            raise poller.exception()  # type: ignore[misc]

    async def _poll(self) -> None:
        offset: int | None = None
        backoff = 0.5
        while True:
            try:
                batch = await self.api.call(
                    "getUpdates",
                    lambda: self.bot.get_updates(offset, self.poll_timeout, list(ALLOWED_UPDATES)),
                )
            except InvalidToken:
                log.error("telegram rejected the bot token; the Telegram channel stops")
                raise
            except TelegramError as exc:
                log.warning("telegram polling failed (%s); retrying in %.1fs", self.api.scrub(exc), backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff)
                continue
            backoff = 0.5
            offset = batch.next_offset
            for reason in batch.skipped:
                log.warning("telegram sent a malformed update; skipped (%s)", reason)
            for update in batch.updates:
                self.dispatch(update)
            if offset is not None:  # the next poll confirms everything below it
                self._seen.confirmed_below(offset)

    # -- inbound ---------------------------------------------------------------------------------

    def dispatch(self, update: Update) -> None:
        """Route one update (from polling or the webhook); never blocks, never raises."""
        if not self._seen.first_time(update.update_id):
            log.debug("telegram update %s redelivered; dropped", update.update_id)
            return
        if update.callback_query is not None:
            self._spawn(self.confirmations.press(update.callback_query))
            return
        message = update.message
        if message is None or self.router is None:
            return
        route = self.router.route(message)
        if route.reply:
            self._spawn(
                self.api.quietly(
                    "pairing reply", self.api.send_html(message.chat.id, escape(route.reply), route.reply)
                )
            )
        if route.inbound is None:
            return
        chat_id = message.chat.id
        user_id = message.from_user.id if message.from_user else 0
        words = route.inbound.text.split(maxsplit=1)
        if words and words[0].split("@", 1)[0].lower() == "/cancel":
            self._spawn(self._handle(route.inbound, chat_id, user_id))  # around the chat lock, see BotCore
            return
        if self._queued.get(chat_id, 0) >= MAX_QUEUED:
            log.warning("telegram chat %s has too many queued messages; dropped one", chat_id)
            if chat_id not in self._overflow_told:  # once per flood, not once per dropped message
                self._overflow_told.add(chat_id)
                self._spawn(
                    self.api.quietly(
                        "overflow notice", self.api.send_html(chat_id, escape(OVERFLOW_NOTE), OVERFLOW_NOTE)
                    )
                )
            return
        self._queued[chat_id] = self._queued.get(chat_id, 0) + 1
        self._spawn(self._in_order(route.inbound, chat_id, user_id))

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _in_order(self, inbound: Inbound, chat_id: int, user_id: int) -> None:
        """One message at a time per chat, in arrival order (asyncio.Lock wakes waiters FIFO)."""
        lock = self._chat_locks.setdefault(chat_id, asyncio.Lock())
        try:
            async with lock:
                await self._handle(inbound, chat_id, user_id)
        finally:
            self._queued[chat_id] -= 1
            if self._queued[chat_id] == 0:  # nobody holds or awaits the lock: forget the chat
                del self._queued[chat_id], self._chat_locks[chat_id]
                self._overflow_told.discard(chat_id)

    async def _handle(self, inbound: Inbound, chat_id: int, user_id: int) -> None:
        from bot.channels.telegram.sink import (  # lazy: 30 ms, 1392 KiB
            TelegramSink,  # the agent's types: loaded after ready
        )

        sink = TelegramSink(
            self.api,
            self.confirmations,
            chat_id,
            user_id,
            interval=self.settings.stream_edit_interval,
            hold=self.hold,
            explorers=self.explorers,
        )
        typing = asyncio.create_task(self._typing(sink))
        try:
            await self.core.handle(inbound, sink)
        except Exception as exc:  # noqa: BLE001 - one failed message must not stop the channel
            log.error("telegram message failed: %s", self.api.scrub(exc))
            await self.api.quietly("error reply", self.api.send_html(chat_id, FAILED, FAILED))
        finally:
            typing.cancel()
            sink.close()

    async def _typing(self, sink: TelegramSink) -> None:
        """Telegram shows "typing…" for about 5 s per call; refresh it while the reply is in the works
        (from `hold` on: a reply that is already there needs no indicator), except while the reply
        waits for the user to answer a confirmation."""
        await asyncio.sleep(self.hold)
        while True:
            if not sink.asking:
                await self.api.quietly("typing", self.api.typing(sink.chat_id))
            await asyncio.sleep(self.typing_interval)

    # -- outbound --------------------------------------------------------------------------------

    async def send_text(self, chat_id: str, text: str) -> None:
        """A notification: Markdown, chunked at Telegram's limit, HTML with a plain fallback."""
        for chunk in split_message(text, LIMIT):
            await self.api.send(int(chat_id), chunk)


__all__ = ["MENU", "TelegramChannel", "explorer_links", "make_bot"]
