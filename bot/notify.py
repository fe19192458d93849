"""Proactive messages (heartbeat, cron results, signer events) to one place the user chose.

The target is `channel:chat`: an explicit one, else `bot.notify.default_target`, else the last
private chat someone wrote from (remembered across restarts in `<state>/notify-last.json`, 0600).
Groups never become a fallback target: a wallet notice must not land in a shared room by accident.
`notify` never raises into its caller (a scheduler must keep running when Telegram is down) and
logs failures by target and error type only, never the text.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path

from bot.channels.base import Inbound
from bot.security.redact import redact
from bot.tools.basics import ContextKind
from policies.kernel.files import write_private_file

log = logging.getLogger(__name__)

Sender = Callable[[str, str], Awaitable[None]]
TARGET_RE = re.compile(r"^(?P<channel>[a-z][a-z0-9_-]{0,31}):(?P<chat>[^\s:]{1,128})$")
LAST_FILE = "notify-last.json"


def parse_target(target: str) -> tuple[str, str]:
    """`telegram:123` -> ("telegram", "123"); anything else is a ValueError."""
    match = TARGET_RE.match(target)
    if match is None:
        raise ValueError(f"not a notification target: {target!r} (expected channel:chat, e.g. telegram:123)")
    return match["channel"], match["chat"]


class Notifier:
    def __init__(self, default_target: str | None = None, state_dir: Path | None = None) -> None:
        if default_target is not None:
            parse_target(default_target)
        self.default_target = default_target
        self._senders: dict[str, Sender] = {}
        self._last_path = state_dir / LAST_FILE if state_dir is not None else None
        self.last_dm: str | None = self._load_last()

    def register(self, channel: str, send: Sender) -> None:
        """A channel offers `send(chat_id, text)`; registering again replaces it (a reconnect)."""
        self._senders[channel] = send

    def note_inbound(self, inbound: Inbound) -> None:
        """Remember the last private chat, the fallback when no default target is configured."""
        if inbound.kind is not ContextKind.DM:
            return
        target = f"{inbound.channel}:{inbound.chat or inbound.peer}"
        if TARGET_RE.match(target) is None or target == self.last_dm:
            return
        self.last_dm = target
        if self._last_path is not None:
            try:
                write_private_file(self._last_path, json.dumps({"target": target}).encode())
            except OSError as exc:
                log.warning("could not remember the last chat: %s", type(exc).__name__)

    def resolve(self, target: str | None = None) -> str | None:
        return target or self.default_target or self.last_dm

    async def notify(
        self, text: str, target: str | None = None, *, public: Collection[str] = ()
    ) -> str | None:
        """Deliver `text`; the target used, or None if there was nowhere (or no way) to deliver it.

        The text is redacted like any output; `public` lists values the caller vouches for (a tx hash
        the signer returned) that would otherwise look like a 64-hex key."""
        chosen = self.resolve(target)
        if chosen is None:
            log.info("notification dropped: no target configured and no private chat seen yet")
            return None
        try:
            channel, chat = parse_target(chosen)
        except ValueError:
            log.warning("notification dropped: invalid target")
            return None
        send = self._senders.get(channel)
        if send is None:
            log.warning("notification to %s dropped: channel %s is not running", chosen, channel)
            return None
        try:
            await send(chat, redact(text, allow=public))
        except Exception as exc:  # noqa: BLE001 - a broken channel must not break the scheduler
            log.warning("notification to %s failed: %s", chosen, type(exc).__name__)
            return None
        return chosen

    def _load_last(self) -> str | None:
        if self._last_path is None:
            return None
        try:
            target = json.loads(self._last_path.read_text(encoding="utf-8")).get("target")
        except (OSError, ValueError, AttributeError):
            return None
        return target if isinstance(target, str) and TARGET_RE.match(target) else None
