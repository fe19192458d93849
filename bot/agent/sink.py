"""What the agent streams its reply into: a ReplySink, one per inbound message.

The agent streams into a ReplySink and asks it for confirmations; it never knows whether the
other end is a terminal, Telegram or Discord. A sink belongs to one inbound message, so a
confirmation can only be answered by the user who sent it, in the chat it came from. The agent
defines it and the channels implement it, so the agent imports nothing of the channels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bot.tools.executor import ToolEvent  # the executor's closure stays off `owlia start`'s way to ready


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
