"""What every channel gives the runtime: inbound messages and a sink for one reply.

The agent streams into a ReplySink and asks it for confirmations; it never knows whether the
other end is a terminal, Telegram or Discord. A sink belongs to one inbound message, so a
confirmation can only be answered by the user who sent it, in the chat it came from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from bot.tools.basics import ContextKind

if TYPE_CHECKING:
    from bot.tools.executor import ToolEvent  # the executor's closure stays off `owlia start`'s way to ready


@dataclass(frozen=True)
class Inbound:
    channel: str  # "console", "telegram", "discord"
    peer: str  # the sender's id on that channel
    message_id: str  # the channel's id for this message: a redelivery carries the same one
    text: str
    kind: ContextKind = ContextKind.DM
    chat: str = ""  # the chat it came from, when that differs from the peer (groups)
    received_at: float = field(default=0.0)

    @property
    def session_key(self) -> str:
        return (
            f"{self.channel}:{self.chat or self.peer}"
            if self.kind is not ContextKind.GROUP
            else f"{self.channel}:{self.chat}:{self.peer}"
        )


class ReplySink(Protocol):
    async def text(self, delta: str) -> None:
        """Streamed reply text, already passed through the secret guard."""

    async def notice(self, text: str) -> None:
        """A note from the runtime (fallback model used, a stop reason, an error)."""

    async def tool_event(self, event: ToolEvent) -> None:
        """A tool started or finished; for sign tools `event.output.data` is the signer's outcome."""

    async def confirm(self, prompt: str, timeout: float) -> bool:
        """Ask the sender to confirm `prompt`; False on no, timeout or anything unclear."""

    async def done(self, text: str) -> None:
        """The run is over; `text` is the whole reply (channels that edit a draft finalize it)."""


async def drain(tasks: Collection[asyncio.Task], grace: float) -> None:
    """At shutdown: let running replies finish for `grace` seconds, then cancel the rest."""
    if tasks:
        _, pending = await asyncio.wait(set(tasks), timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
