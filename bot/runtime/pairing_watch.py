"""Say what happens with pairing: owners hear that someone asked, newcomers hear that they are in.

Pairing codes are approved out of band, often from another process (`owlia pair approve`), so the
running bot learns of requests and grants by reading the access store, not by a callback. The owner
is told who asked but never the code: the code is what the newcomer must show the owner, and handing
it to the owner would let anyone who writes to the bot be approved by a tap.
"""

from __future__ import annotations

import asyncio
import logging

from bot.channels.access import AccessStore
from bot.notify import Notifier

log = logging.getLogger(__name__)

WELCOME = "You are paired with this bot: you can talk to it now. /help lists what it understands."


class PairingWatch:
    def __init__(
        self, access: AccessStore, notifier: Notifier, owners: tuple[str, ...], *, interval: float = 2.0
    ) -> None:
        self.access = access
        self.notifier = notifier
        self.owners = tuple(o for o in owners if not o.startswith("console:"))
        self.interval = interval
        self._task: asyncio.Task[None] | None = None
        self._requests: set[tuple[str, str]] = set()
        self._grants: set[tuple[str, str]] = set()

    async def start(self) -> None:
        self._requests = {(r.channel, r.peer) for r in self.access.pending()}
        self._grants = {(g.channel, g.peer) for g in self.access.grants()}
        self._task = asyncio.create_task(self._run(), name="pairing-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.look()
            except Exception as exc:  # noqa: BLE001 - a busy database is retried at the next look
                log.warning("pairing watch: %s", type(exc).__name__)

    async def look(self) -> None:
        pending = {(r.channel, r.peer): r for r in self.access.pending()}
        for key in pending.keys() - self._requests:
            request = pending[key]
            who = f"{request.channel} user {request.display or 'without a name'} (id {request.peer})"
            text = (
                f"{who} asked to talk to this bot. If you know them, ask them for the pairing code the bot "
                "sent them and approve it with /pair approve CODE (or `owlia pair approve CODE`); "
                "otherwise ignore it: the code expires by itself."
            )
            if not self.owners:  # never to whoever wrote last: that may be anyone paired, who cannot approve
                log.warning(
                    "pairing requested by %s; no bot.pairing.owners are set: `owlia pair list` "
                    "shows it, `owlia pair approve CODE` admits them",
                    who,
                )
            for owner in self.owners:
                await self.notifier.notify(text, owner)
        self._requests = set(pending)
        grants = {(g.channel, g.peer) for g in self.access.grants()}
        for channel, peer in sorted(grants - self._grants):
            await self.notifier.notify(WELCOME, f"{channel}:{peer}")
        self._grants = grants
