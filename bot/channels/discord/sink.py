"""One reply on Discord: a streamed draft edited in place, the signer's cards, button confirmations.

Text streams into one message edited at most once per `interval` (StreamingDraft); a note, a
signer card or a confirmation closes that draft, so what the user reads stays in the order it
happened, and text after it starts a new message. The final text is split into 2000-char messages.
"""

from __future__ import annotations

import discord

from bot.channels.chunking import split_message
from bot.channels.console import render_signer_card
from bot.channels.discord.outlet import LIMIT, Outlet, code_block
from bot.channels.discord.views import Presses, ask
from bot.channels.draft import StreamingDraft
from bot.channels.notes import failure_note, signer_outcome
from bot.tools.executor import ToolEvent

ERROR_CHARS = 300  # a failed tool's message, as shown to the user


class DiscordSink:
    def __init__(self, outlet: Outlet, requester: int, *, interval: float, presses: Presses) -> None:
        self.outlet = outlet
        self.requester = requester
        self.interval = interval
        self.presses = presses
        self._draft = self._new_draft()
        self._segment = ""  # the text streamed into the current draft
        self._streamed = ""  # all text streamed in this reply
        self.sent = 0  # messages posted (an interaction must get at least one)

    def _new_draft(self) -> StreamingDraft[discord.Message]:
        return StreamingDraft(self._send, self.outlet.edit, interval=self.interval, limit=LIMIT)

    async def _send(self, text: str) -> discord.Message:
        self.sent += 1
        return await self.outlet.send(text)

    async def _close_draft(self) -> None:
        if self._segment.strip():
            await self._draft.finish(self._segment)
        self._draft, self._segment = self._new_draft(), ""

    async def text(self, delta: str) -> None:
        self._streamed += delta
        self._segment += delta
        await self._draft.append(delta)

    async def notice(self, text: str) -> None:
        await self._close_draft()
        for chunk in split_message(f"_{discord.utils.escape_markdown(text)}_", LIMIT):
            await self._send(chunk)

    async def tool_event(self, event: ToolEvent) -> None:
        if (outcome := signer_outcome(event)) is not None:
            card = discord.utils.escape_markdown(render_signer_card(dict(outcome)).rstrip())[:LIMIT]
            lead_in = self._draft.handle  # the model's lead-in ("Sending now.") gives way to the card
            self._draft, self._segment = self._new_draft(), ""
            if lead_in is not None:
                await self.outlet.edit(lead_in, card)
            else:
                await self._send(card)
        elif (note := failure_note(event, ERROR_CHARS)) is not None:
            await self._close_draft()
            await self._send(code_block(f"[tool] {note}"))

    async def confirm(self, prompt: str, timeout: float) -> bool:
        await self._close_draft()
        self.sent += 1
        return await ask(self.outlet, self.requester, prompt, timeout, self.presses)

    async def done(self, text: str) -> None:
        """The whole reply. Streamed text finishes its draft; anything else (a command's answer,
        "Stopped." after /cancel) is sent after it."""
        await self._close_draft()
        if text.strip() and text != self._streamed:
            await self._draft.finish(text)
