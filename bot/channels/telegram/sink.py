"""One reply in a Telegram chat: a streamed draft, notes, signer cards and button confirmations.

Text streams into one message edited in place (StreamingDraft: at most one edit per interval).
Anything else the run shows (a note, a signer card, a confirmation) first closes the current draft
with the text streamed so far, so the chat reads in the order things happened; text after it
starts a new draft. Delivery failures are logged and never abort the run (a transfer may already
be signed), except a confirmation that cannot be shown, which is a no.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from bot.channels.console import render_signer_card
from bot.channels.draft import StreamingDraft
from bot.channels.notes import failure_note, signer_outcome
from bot.channels.telegram.api import LIMIT, Sent, TelegramApi, fit
from bot.channels.telegram.buttons import Confirmations
from bot.channels.telegram.markup import escape
from bot.tools.executor import ToolEvent
from signer.wire.protocol import RequestStatus

TX_HASH = re.compile(r"^0x[0-9a-fA-F]{64}$")
ERROR_CHARS = 600


def signer_card_html(data: Mapping[str, Any], explorers: Mapping[int, str]) -> list[tuple[str, str]]:
    """The signer's own card as messages (HTML, plain): its words from `render_signer_card`, split
    if a decoded batch is long (never cut: every call must be visible), plus a tx link when the
    chain has an explorer. The link is built only from a well-formed hash."""
    card = render_signer_card(dict(data)).rstrip()
    pieces = [(escape(piece), piece) for piece in fit(card, LIMIT - 64)]
    tx_hash = str(data.get("tx_hash") or "")
    template = explorers.get(_int(data.get("chain_id")))  # type: ignore[arg-type]
    if data.get("status") == RequestStatus.SIGNED and template and TX_HASH.match(tx_hash):
        url = template.replace("{hash}", tx_hash)
        html, plain = pieces[-1]
        pieces[-1] = (f'{html}\n<a href="{escape(url)}">View it in the explorer</a>', f"{plain}\n{url}")
    return pieces


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class TelegramSink:
    """`hold`: deltas are kept back this long before the draft is first sent, so a reply that is
    complete by then goes out as one message (one API call instead of a send and an edit)."""

    def __init__(
        self,
        api: TelegramApi,
        confirmations: Confirmations,
        chat_id: int,
        user_id: int,
        *,
        interval: float,
        hold: float = 0.0,
        explorers: Mapping[int, str] | None = None,
    ) -> None:
        self.api = api
        self.confirmations = confirmations
        self.chat_id = chat_id
        self.user_id = user_id
        self.interval = interval
        self.hold = hold
        self.explorers = explorers or {}
        self._streamed = ""  # every delta of this run
        self._segment = 0  # where the current draft's text starts in `_streamed`
        self._held = ""  # streamed, not yet given to the draft (inside the hold window)
        self._showing = False  # the current draft has been given text
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one draft operation at a time: the hold timer runs beside the stream
        self.asking = False  # waiting for the user's answer: the bot is not "typing"
        self._draft = self._new_draft()

    def _new_draft(self) -> StreamingDraft[Sent | None]:
        return StreamingDraft(self._send, self._edit, interval=self.interval, limit=LIMIT)

    async def _send(self, text: str) -> Sent | None:
        return await self.api.quietly("send", self.api.send(self.chat_id, text))

    async def _edit(self, target: Sent | None, text: str) -> None:
        if target is None:  # the draft's first message was never delivered: try a new one
            await self._send(text)
            return
        await self.api.quietly("edit", self.api.edit(target, text))

    async def _release(self) -> None:
        held, self._held = self._held, ""
        self._showing = True
        if held:
            await self._draft.append(held)

    async def _release_later(self) -> None:
        await asyncio.sleep(self.hold)
        async with self._lock:
            self._timer = None
            await self._release()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """The handler is over (or cancelled): no held text may be sent after it."""
        self._stop_timer()

    async def _finish_segment(self) -> None:
        """Finish the current draft with what streamed into it (lock held)."""
        self._stop_timer()
        text = self._streamed[self._segment :]
        if text.strip():
            await self._draft.finish(text)
            self._draft = self._new_draft()
        self._segment = len(self._streamed)
        self._held, self._showing = "", False

    async def _take_lead_in(self) -> Sent | None:
        """Before a card: the model's lead-in ("Sending now.") is dropped; its message, if one was
        already sent, is returned for the card to take its place."""
        async with self._lock:
            self._stop_timer()
            handle = self._draft.handle if self._showing else None
            self._segment = len(self._streamed)
            self._held, self._showing = "", False
            self._draft = self._new_draft()
            return handle

    async def _close_draft(self) -> None:
        """Before showing something else, so the chat reads in the order things happened."""
        async with self._lock:
            await self._finish_segment()

    async def text(self, delta: str) -> None:
        self._streamed += delta
        async with self._lock:
            self._held += delta
            if self._showing or self.hold <= 0:
                await self._release()
            elif self._timer is None:
                self._timer = asyncio.create_task(self._release_later())

    async def notice(self, text: str) -> None:
        await self._close_draft()
        await self.api.quietly("notice", self.api.send_html(self.chat_id, f"<i>{escape(text)}</i>", text))

    async def tool_event(self, event: ToolEvent) -> None:
        if (outcome := signer_outcome(event)) is not None:
            pieces = signer_card_html(outcome, self.explorers)
            lead_in = await self._take_lead_in()
            if lead_in is not None and pieces:  # "Sending now." becomes the card: one message for the action
                html, plain = pieces.pop(0)
                await self.api.quietly("signer card", self.api.edit_html(lead_in, html, plain))
            for html, plain in pieces:
                await self.api.quietly("signer card", self.api.send_html(self.chat_id, html, plain))
        elif (note := failure_note(event, ERROR_CHARS)) is not None:
            await self._close_draft()
            await self.api.quietly(
                "tool note", self.api.send_html(self.chat_id, f"<i>{escape(note)}</i>", note)
            )

    async def confirm(self, prompt: str, timeout: float) -> bool:
        await self._close_draft()
        self.asking = True
        try:
            return await self.confirmations.ask(self.chat_id, self.user_id, prompt, timeout)
        finally:
            self.asking = False

    async def done(self, text: str) -> None:
        """The whole reply. After a stream, `text` is what streamed and the rest of it finishes the
        current draft; anything else (a command's answer, "Stopped.") is a message of its own."""
        async with self._lock:
            if text.startswith(self._streamed):
                self._stop_timer()
                final = text[self._segment :]
            else:
                await self._finish_segment()
                final = text
            if final.strip():
                await self._draft.finish(final)
