"""What every channel gives the runtime: inbound messages (the reply goes to a sink each channel
implements, bot.agent.sink.ReplySink)."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass, field

from bot.tools.basics import ContextKind


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


async def drain(tasks: Collection[asyncio.Task], grace: float) -> None:
    """At shutdown: let running replies finish for `grace` seconds, then cancel the rest."""
    if tasks:
        _, pending = await asyncio.wait(set(tasks), timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
