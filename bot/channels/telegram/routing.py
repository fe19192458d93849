"""Which Telegram messages reach the bot, and as what.

Default deny at every step: only private chats unless groups are enabled; in a group only listed
chats, only senders who are allowlisted or paired, and (by default) only messages that mention the
bot or reply to it, each sender with a session of their own. In a private chat the Gatekeeper
decides, and a stranger hears nothing but a pairing code. Other bots, channel posts and messages
without text are dropped.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from bot.channels.access import Gatekeeper
from bot.channels.base import Inbound
from bot.channels.telegram.botapi import Message, User
from bot.config import TelegramSettings
from bot.tools.basics import ContextKind
from bot.workspace.prompt import wrap_untrusted

CHANNEL = "telegram"
GROUP_TYPES = frozenset({"group", "supergroup"})
ALLOWED_UPDATES = ["message", "callback_query"]  # what we ask Telegram for; nothing else arrives


@dataclass(frozen=True)
class Route:
    inbound: Inbound | None = None  # hand this to the core
    reply: str | None = None  # or say only this (a pairing code), as plain text


DROP = Route()


def display_name(user: User) -> str:
    name = " ".join(part for part in (user.first_name, user.last_name) if part)
    return f"{name} (@{user.username})" if user.username else name


class Router:
    def __init__(self, settings: TelegramSettings, gate: Gatekeeper, me: User) -> None:
        self.settings = settings
        self.gate = gate
        self.me = me
        username = re.escape(me.username or "")
        self._mention = re.compile(rf"@{username}\b", re.IGNORECASE) if username else None

    def route(self, message: Message) -> Route:
        sender = message.from_user
        if sender is None or sender.is_bot or message.text is None:
            return DROP
        peer = str(sender.id)
        chat = message.chat
        if chat.type == "private":
            admission = self.gate.admit(peer, display_name(sender))
            if not admission.allowed:
                return Route(reply=admission.reply)
            return Route(self._inbound(message, peer, _own_words(message, message.text), ContextKind.DM, ""))
        if chat.type in GROUP_TYPES:
            return self._group(message, peer)
        return DROP

    def _group(self, message: Message, peer: str) -> Route:
        groups = self.settings.groups
        chat_id = str(message.chat.id)
        if not groups.enabled or chat_id not in groups.allow_chats:
            return DROP
        if not self.gate.admits(peer):
            return DROP  # strangers get no pairing code in public
        text = message.text or ""
        mentioned = self._mention is not None and self._mention.search(text) is not None
        replied = (
            message.reply_to_message is not None
            and message.reply_to_message.from_user is not None
            and message.reply_to_message.from_user.id == self.me.id
        )
        if groups.mention_only and not (mentioned or replied):
            return DROP
        if self._mention is not None:
            text = self._mention.sub("", text).strip()
        if not text:
            return DROP
        return Route(self._inbound(message, peer, _own_words(message, text), ContextKind.GROUP, chat_id))

    @staticmethod
    def _inbound(message: Message, peer: str, text: str, kind: ContextKind, chat: str) -> Inbound:
        return Inbound(
            CHANNEL,
            peer,
            f"{message.chat.id}:{message.message_id}",
            text,
            kind,
            chat,
            received_at=time.time(),
        )


def _own_words(message: Message, text: str) -> str:
    """A forwarded message is someone else's words: fenced as untrusted, so the model reads it as data
    and no address in it counts as one the user wrote (bot.tools.provenance)."""
    if not message.forwarded:
        return text
    return "(the user forwarded this message; someone else wrote it)\n" + wrap_untrusted(
        "telegram_forward", text
    )
