"""The Discord channel: discord.py's gateway client in front of BotCore.

Default deny: DMs from allowlisted or paired users are answered, strangers get a pairing code and
nothing else; guild messages are ignored unless `guilds.enabled`, and then only in allowlisted
channels, only when the bot is mentioned (by default), only from admitted users, each with their
own session. Guild strangers are never given a code (a crowd could otherwise use up the pending
pairing slots). The gateway asks for the fewest intents that cover this: DM messages (whose
content Discord always delivers to the bot), plus guild messages when guilds are enabled, plus the
privileged message-content intent only when guild messages need not mention the bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import discord

from bot.channels.access import AccessStore, Gatekeeper
from bot.channels.base import Inbound, drain
from bot.channels.chunking import split_message
from bot.channels.core import BotCore, Handled
from bot.channels.discord.commands import build_tree
from bot.channels.discord.endpoints import (
    Endpoints,
    RoutedHTTPClient,
    install_webhook_adapter,
    remove_webhook_adapter,
)
from bot.channels.discord.outlet import LIMIT, ChannelOutlet, InteractionOutlet
from bot.channels.discord.sink import DiscordSink
from bot.channels.discord.views import Presses
from bot.config import DiscordSettings
from bot.tools.base import ContextKind

log = logging.getLogger(__name__)

PRIVATE = "This bot is private."
NOT_HERE = "I don't answer here."
FAILED = "Something went wrong; nothing more was done. The bot log has details."
CANCEL = "/cancel"  # BotCore answers it without waiting for the chat's lock, so it is never queued
TYPING_EVERY = 8.0  # Discord shows "typing…" for 10 s per request
MAX_WAITING = 20  # messages queued behind a chat's running one; more are dropped (a flood)
STOP_GRACE = 5.0


@dataclass(frozen=True)
class Where:
    kind: ContextKind
    chat: str  # "" for a DM (the session is the user's); the channel id in a guild


def route(settings: DiscordSettings, *, dm: bool, channel_id: str, mentioned: bool) -> Where | None:
    """Where a message counts, or None to ignore it: every DM; in a guild only an allowlisted
    channel, with guilds enabled, and (mention_only) only when the bot is mentioned."""
    if dm:
        return Where(ContextKind.DM, "")
    guilds = settings.guilds
    if not guilds.enabled or channel_id not in guilds.allow_chats or (guilds.mention_only and not mentioned):
        return None
    return Where(ContextKind.GROUP, channel_id)


def intents_for(settings: DiscordSettings) -> discord.Intents:
    intents = discord.Intents.none()
    intents.dm_messages = True
    if settings.guilds.enabled:
        intents.guilds = True
        intents.guild_messages = True
        intents.message_content = not settings.guilds.mention_only
    return intents


class _Client(discord.Client):
    def __init__(self, channel: DiscordChannel, endpoints: Endpoints) -> None:
        super().__init__(
            intents=intents_for(channel.settings),
            max_messages=None,
            chunk_guilds_at_startup=False,
            member_cache_flags=discord.MemberCacheFlags.none(),
        )
        old = self.http
        self.http = RoutedHTTPClient(
            old.loop,
            old.connector or None,
            proxy=old.proxy,
            proxy_auth=old.proxy_auth,
            unsync_clock=not old.use_clock,
            http_trace=old.http_trace,
            max_ratelimit_timeout=old.max_ratelimit_timeout,
            endpoints=endpoints,
        )
        self._connection.http = self.http
        self.channel = channel
        self.tree = build_tree(self, channel)

    async def setup_hook(self) -> None:
        await self.tree.sync()

    async def on_message(self, message: discord.Message) -> None:
        await self.channel.on_message(message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        await self.channel.on_interaction(interaction)


class DiscordChannel:
    name = "discord"

    def __init__(
        self,
        core: BotCore,
        settings: DiscordSettings,
        token: str,
        access: AccessStore,
        *,
        shutdown_grace: float = 10.0,
        max_waiting: int = MAX_WAITING,
    ) -> None:
        self.core = core
        self.shutdown_grace = shutdown_grace
        self.max_waiting = max_waiting
        self.settings = settings
        self._token = token
        self.access = access
        self.gate = Gatekeeper(access, self.name, settings.allow_from)
        self.endpoints = Endpoints(settings.api_base, settings.gateway_url)
        self.client = _Client(self, self.endpoints)
        self.presses = Presses()
        self._tasks: set[asyncio.Task] = set()  # replies in the works
        self._waiting: dict[str, int] = {}  # per session: handlers running or queued on its lock
        self._overflow_told: set[str] = set()  # sessions told, in this flood, that messages were dropped
        self._closing = False

    # -- life cycle --------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Log in, register the commands, serve the gateway until `stop` is set, then close:
        running replies get `shutdown_grace` seconds to finish, the rest are cancelled."""
        adapter = install_webhook_adapter(self.endpoints)
        gateway: asyncio.Task | None = None
        stopping = asyncio.create_task(stop.wait())
        try:
            await self.client.login(self._token)
            gateway = asyncio.create_task(self.client.connect(reconnect=True), name="discord-gateway")
            await asyncio.wait({gateway, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if gateway.done():
                gateway.result()  # a fatal gateway error (bad token, missing intents) surfaces here
        finally:
            stopping.cancel()
            self._closing = True
            await drain(self._tasks, self.shutdown_grace)
            await self.client.close()
            if gateway is not None and not gateway.done():
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(gateway, STOP_GRACE)
            remove_webhook_adapter(adapter)

    async def send_text(self, chat_id: str, text: str) -> None:
        """A notification, chunked to 2000 chars: to an allowlisted guild channel by its id, else to
        the user with that id in their DM (Discord ids are unique across users and channels)."""
        if self.client.user is None:
            raise RuntimeError("the Discord channel is not connected")
        if not chat_id.isdigit():
            raise ValueError(f"a Discord notification target is a user or channel id, not {chat_id!r}")
        guilds = self.settings.guilds
        if guilds.enabled and chat_id in guilds.allow_chats:
            target: discord.abc.Messageable = self.client.get_partial_messageable(int(chat_id))
        else:
            target = await self.client.create_dm(discord.Object(int(chat_id)))
        outlet = ChannelOutlet(target)
        for chunk in split_message(text, LIMIT):
            await outlet.send(chunk)

    # -- inbound -----------------------------------------------------------------------------

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        await self.presses.dispatch(interaction)  # button presses; slash commands go to the tree

    async def on_message(self, message: discord.Message) -> None:
        me = self.client.user
        if me is None or self._closing or message.author.bot or message.author.id == me.id:
            return
        where = self._where_message(message, me.id)
        if where is None:
            return
        peer = str(message.author.id)
        outlet = ChannelOutlet(message.channel)
        if not await self._admitted(peer, message.author.name, where, outlet.send):
            return
        text = message.content
        if where.kind is ContextKind.GROUP:
            text = text.replace(f"<@{me.id}>", "").replace(f"<@!{me.id}>", "").strip()
        inbound = Inbound(
            self.name, peer, str(message.id), text, where.kind, where.chat, message.created_at.timestamp()
        )
        sink = DiscordSink(
            outlet, message.author.id, interval=self.settings.stream_edit_interval, presses=self.presses
        )
        async with _typing(message.channel):
            await self._serve(inbound, sink)

    async def on_command(self, interaction: discord.Interaction, text: str) -> None:
        where = self._where_interaction(interaction)
        if where is None or self._closing:
            await interaction.response.send_message(NOT_HERE, ephemeral=True)
            return
        peer = str(interaction.user.id)

        async def tell(reply: str) -> None:
            await interaction.response.send_message(reply, ephemeral=True)

        if not await self._admitted(peer, interaction.user.name, where, tell, always=True):
            return
        inbound = Inbound(
            self.name,
            peer,
            f"interaction:{interaction.id}",
            text,
            where.kind,
            where.chat,
            interaction.created_at.timestamp(),
        )
        await interaction.response.defer(thinking=True)
        sink = DiscordSink(
            InteractionOutlet(interaction),
            interaction.user.id,
            interval=self.settings.stream_edit_interval,
            presses=self.presses,
        )
        handled = await self._serve(inbound, sink)
        if sink.sent == 0:  # replace Discord's "thinking…" with something
            duplicate = handled is not None and handled.status == "duplicate"
            await sink.outlet.send("Already handled." if duplicate else "Done.")

    # -- helpers -----------------------------------------------------------------------------

    def _where_message(self, message: discord.Message, me: int) -> Where | None:
        if isinstance(message.channel, discord.GroupChannel):
            return None
        return route(
            self.settings,
            dm=isinstance(message.channel, discord.DMChannel),
            channel_id=str(message.channel.id),
            mentioned=any(u.id == me for u in message.mentions),
        )

    def _where_interaction(self, interaction: discord.Interaction) -> Where | None:
        if interaction.guild_id is None and not interaction.context.dm_channel:
            return None  # a user-installed command in someone else's DM or group is not private
        return route(
            self.settings,
            dm=interaction.guild_id is None,
            channel_id=str(interaction.channel_id),
            mentioned=True,
        )  # a slash command is addressed to the bot

    async def _admitted(
        self,
        peer: str,
        display: str,
        where: Where,
        tell: Callable[[str], Awaitable[object]],
        *,
        always: bool = False,
    ) -> bool:
        """DMs go through the gatekeeper (strangers get a code); in guilds strangers are ignored.
        `always`: an interaction must be answered, so a stranger hears at least PRIVATE."""
        if where.kind is ContextKind.DM:
            admission = self.gate.admit(peer, display)
            if admission.allowed:
                return True
            reply = admission.reply or (PRIVATE if always else None)
        else:
            if self.gate.admits(peer):
                return True
            reply = PRIVATE if always else None
        if reply:
            await tell(reply)
        return False

    async def _serve(self, inbound: Inbound, sink: DiscordSink) -> Handled | None:
        """core.handle (which orders a chat's messages and dedupes them), with a cap on how many may
        queue per chat; a failure is logged and the user told, never shown its details."""
        key = inbound.session_key
        queued = int(inbound.text.strip().lower() != CANCEL)
        if queued and self._waiting.get(key, 0) > self.max_waiting:  # one running + max_waiting queued
            log.warning("discord: too many messages queued in one chat; dropped one")
            if key not in self._overflow_told:  # once per flood, not once per dropped message
                self._overflow_told.add(key)
                await sink.notice(
                    f"{self.max_waiting} of your messages are already waiting, so I dropped the "
                    "ones after them. Send those again once I have answered."
                )
            return None
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._waiting[key] = self._waiting.get(key, 0) + queued
        try:
            return await self.core.handle(inbound, sink)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one bad message must not take the channel down
            log.exception("discord: handling a message failed")
            await sink.notice(FAILED)
            return None
        finally:
            self._tasks.discard(task)
            self._waiting[key] -= queued
            if not self._waiting[key]:
                del self._waiting[key]
                self._overflow_told.discard(key)


@contextlib.asynccontextmanager
async def _typing(channel: discord.abc.Messageable) -> AsyncIterator[None]:
    """ "typing…" until the reply is done; best effort (a failed typing call never blocks a reply)."""

    async def loop() -> None:
        while True:
            try:
                await channel.typing()
            except discord.HTTPException as exc:
                log.debug("discord typing failed: %s", exc.status)
            await asyncio.sleep(TYPING_EVERY)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
