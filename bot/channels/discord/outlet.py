"""Where one reply goes: a channel (a DM or a guild channel) or an interaction's followups.

Discord renders the model's Markdown itself, so there is no conversion that could fail and no
plain-text fallback to need: text is sent as written. Every message is sent with mentions
disabled: a reply must never ping @everyone, a role or a user because the model, or a page it
read, said so.
"""

from __future__ import annotations

from typing import Any, Protocol

import discord
from discord.utils import MISSING

LIMIT = 2000  # characters per Discord message
NO_MENTIONS = discord.AllowedMentions.none()


def code_block(text: str) -> str:
    """`text` shown literally: nothing in it can close the block, format, hide or link anything
    (a zero-width space after every backtick: no run of them can form a fence)."""
    return "```\n" + text.rstrip("\n").replace("`", "`\u200b") + "\n```"


class Outlet(Protocol):
    async def send(self, text: str, view: discord.ui.View | None = None) -> discord.Message: ...

    async def edit(self, message: discord.Message, text: str, *, drop_view: bool = False) -> None: ...


class _Edits:
    async def edit(self, message: discord.Message, text: str, *, drop_view: bool = False) -> None:
        extra: dict[str, Any] = {"view": None} if drop_view else {}
        await message.edit(content=text, allowed_mentions=NO_MENTIONS, **extra)


class ChannelOutlet(_Edits):
    def __init__(self, channel: discord.abc.Messageable) -> None:
        self.channel = channel

    async def send(self, text: str, view: discord.ui.View | None = None) -> discord.Message:
        return await self.channel.send(text, view=view or MISSING, allowed_mentions=NO_MENTIONS)


class InteractionOutlet(_Edits):
    """Followups of a deferred interaction: the first one replaces Discord's "thinking..."."""

    def __init__(self, interaction: discord.Interaction) -> None:
        self.interaction = interaction

    async def send(self, text: str, view: discord.ui.View | None = None) -> discord.Message:
        return await self.interaction.followup.send(
            text, view=view or MISSING, wait=True, allowed_mentions=NO_MENTIONS
        )
