"""A streamed reply shown as one message edited in place, without tripping flood control.

Chat platforms rate-limit edits (Telegram answers 429 well before one edit per second per chat),
so the draft is edited at most once per `interval`; deltas that arrive in between are shown by the
next edit or by the final text. The final text replaces the draft and, when it is longer than one
message, continues in new messages split by `split_message`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from bot.channels.chunking import split_message

H = TypeVar("H")
ELLIPSIS = " …"


class StreamingDraft(Generic[H]):
    def __init__(
        self,
        send: Callable[[str], Awaitable[H]],
        edit: Callable[[H, str], Awaitable[None]],
        *,
        interval: float,
        limit: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._edit = edit
        self.interval = interval
        self.limit = limit
        self._clock = clock
        self._buffer = ""
        self._shown = ""
        self._handle: H | None = None
        self._sent = False
        self._last = 0.0
        self.edits = 0

    def _preview(self) -> str:
        """The streamed text so far, cut to fit one message (the final text is split properly)."""
        text = self._buffer.strip()
        if len(text) + len(ELLIPSIS) > self.limit:
            text = text[: self.limit - len(ELLIPSIS)]
        return text + ELLIPSIS

    async def append(self, delta: str) -> None:
        self._buffer += delta
        if not self._buffer.strip():
            return
        now = self._clock()
        if not self._sent:
            self._sent = True
            self._last = now
            self._shown = self._preview()
            self._handle = await self._send(self._shown)
            return
        if now - self._last < self.interval:
            return
        preview = self._preview()
        if preview != self._shown and self._handle is not None:
            self._last = now
            self._shown = preview
            self.edits += 1
            await self._edit(self._handle, preview)

    @property
    def handle(self) -> H | None:
        """The draft's message, once sent."""
        return self._handle

    async def finish(self, text: str) -> list[H]:
        chunks = split_message(text, self.limit) if text.strip() else []
        handles: list[H] = []
        if self._handle is not None:
            first = chunks.pop(0) if chunks else "(no reply)"
            if first != self._shown:
                self.edits += 1
                await self._edit(self._handle, first)
            handles.append(self._handle)
        for chunk in chunks:
            handles.append(await self._send(chunk))
        return handles
