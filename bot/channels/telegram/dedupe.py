"""Which Telegram updates this process has dispatched, in memory that stays small.

Telegram delivers an update again while it is not confirmed: with long polling, until a getUpdates
call asks for an offset past it; with a webhook, until our answer is a 2xx. Polling therefore
needs to remember only the ids at or above the offset it polls with (one batch, at most 100):
every id below it is confirmed, and Telegram does not send a confirmed update again. A webhook has
no offset, so the last `window` ids are kept. Either way a message that still comes twice (a
restart, a forced redelivery) is dropped again by the session's own inbound-id check (BotCore).
"""

from __future__ import annotations

from collections import OrderedDict


class SeenUpdates:
    """Update ids dispatched and not yet confirmed to Telegram, oldest first, at most `window`."""

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self.window = window
        self._ids: OrderedDict[int, None] = OrderedDict()

    def first_time(self, update_id: int) -> bool:
        """True (and remembered) the first time an id comes; False when it comes again."""
        if update_id in self._ids:
            return False
        self._ids[update_id] = None
        if len(self._ids) > self.window:
            self._ids.popitem(last=False)
        return True

    def confirmed_below(self, offset: int) -> None:
        """Polling asks for `offset` from now on: the ids below it cannot come again, forget them."""
        for update_id in [i for i in self._ids if i < offset]:
            del self._ids[update_id]

    def __len__(self) -> int:
        return len(self._ids)


__all__ = ["SeenUpdates"]
