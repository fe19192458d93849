"""After a restart, say sorry for the questions it cut off: nobody should wait on a reply that never comes.

A run in flight when the bot stops is withdrawn (bot.sessions.turns: by the run itself on a clean
stop, by the next process on a crash). At start this service looks through recently written
sessions for a last question withdrawn that way and tells its chat, through the notifier, that it
was not answered. What was told is remembered across restarts (`<state>/cut-off-told.json`, 0600),
so a second restart does not apologise twice; a chat that cannot be reached now (the console, a
channel not running) is told by BotCore at its next message instead.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import unquote

from bot.notify import Notifier
from bot.sessions import session_lock
from bot.sessions.keys import target_of_session
from bot.sessions.records import MessageRecord
from bot.sessions.turns import Withdrawn, preview, withdrawn_refs
from policies.kernel.files import write_private_file

if TYPE_CHECKING:
    from bot.runtime.state import Runtime

log = logging.getLogger(__name__)
TOLD_FILE = "cut-off-told.json"
RECENT_SESSIONS = 50
RECENT_SECONDS = 86400.0
MAX_REMEMBERED = 1000
SORRY = (
    'Sorry: I was restarted before I could answer "{preview}", so it was not answered and nothing '
    "more was done for it. Send it again if you still want it (/approvals shows anything it had already "
    "started)."
)


def cut_off_question(records: Sequence[MessageRecord]) -> MessageRecord | None:
    """The last question of a conversation, if a restart withdrew it before its answer."""
    last = next((r for r in reversed(records) if r.role == "user" and r.kind == "normal"), None)
    if last is None:
        return None
    return last if withdrawn_refs(records).get(last.id) is Withdrawn.INTERRUPTED else None


class CutOffReplies:
    def __init__(self, runtime: Runtime, notifier: Notifier) -> None:
        self.runtime = runtime
        self.notifier = notifier
        state = runtime.services.state_dir
        self._path = state / TOLD_FILE if state is not None else None
        self._told: list[str] = self._load()

    async def start(self) -> None:
        for key in self._recent_keys():
            try:
                await self._apologise(key)
            except Exception as exc:  # noqa: BLE001 - one damaged session must not stop the bot's start
                log.info(
                    "session %s skipped while looking for cut-off questions: %s", key, type(exc).__name__
                )

    async def stop(self) -> None:
        return None

    def _recent_keys(self) -> list[str]:
        directory = self.runtime.sessions.directory
        cutoff = time.time() - RECENT_SECONDS
        written = [(p.stat().st_mtime, p) for p in directory.glob("*.jsonl")]
        recent = sorted(((m, p) for m, p in written if m >= cutoff), reverse=True)[:RECENT_SESSIONS]
        return [unquote(p.name.removesuffix(".jsonl")) for _, p in recent]

    async def _apologise(self, key: str) -> None:
        async with session_lock(key):
            session = self.runtime.sessions.open(key)
            orphan = session.take_interrupted()  # a crash: the next message would have said it
            question = cut_off_question(session.state.messages)
            if question is None or question.id in self._told:
                return
            text = SORRY.format(preview=preview(question))
            if await self.notifier.notify(text, target_of_session(key)) is None:
                session.interrupted = orphan  # nowhere to say it now: BotCore says it at the next message
                return
            self._remember(question.id)

    def _remember(self, turn_id: str) -> None:
        self._told = [*self._told, turn_id][-MAX_REMEMBERED:]
        if self._path is None:
            return
        try:
            write_private_file(self._path, json.dumps(self._told).encode())
        except OSError as exc:
            log.warning("could not remember cut-off questions: %s", type(exc).__name__)

    def _load(self) -> list[str]:
        if self._path is None:
            return []
        try:
            told = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        if not isinstance(told, list):
            return []
        return [str(t) for t in told if isinstance(t, str)][-MAX_REMEMBERED:]
