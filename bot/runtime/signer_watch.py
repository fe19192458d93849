"""SignerWatch: tell the user what the signer decided, including decisions that come later.

It follows `sign.outcome` events on the runtime's EventBus (emitted by the sign tools), reads the
signer's own record of each request (`sign.status`: its summary of the bytes, the tx hash, the
rule and reason), and notifies: auto-signed spends, denials, and escalations waiting for the
companion app. A waiting request is polled with exponential backoff until it is signed, denied
or expired, then the result is sent too; requests still waiting when the bot last stopped are
found again in recent sessions at start, so a restart does not lose the companion's answer, and
what was already said is remembered across restarts. The text is always the signer's, never the
model's. At most `max_watched` requests are followed at once; beyond that the user is told it is
not tracked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from bot.agent.convert import tool_result_data
from bot.notify import Notifier
from bot.tools.signer_words import Companion, card_text
from policies.kernel.files import write_private_file
from signer.wire.protocol import RequestStatus
from signer.wire.sign_replies import SignReply

if TYPE_CHECKING:
    from bot.runtime.state import Runtime

log = logging.getLogger(__name__)
PENDING = RequestStatus.PENDING
MAX_REMEMBERED = 1000
RESUME_SESSIONS = 50  # most recently written sessions searched for waiting requests at start
RESUME_WINDOW = 86400.0  # seconds: older sessions cannot hold a request that is still waiting
TOLD_FILE = "signer-told.json"  # what was already said survives a restart: no repeated notices


def describe(reply: SignReply, companion: Companion | None = None) -> str:
    """One notification in the words the chat's cards use (bot/tools/signer_words)."""
    from bot.tools.signing import outcome_data  # lazy: 47 ms, 2692 KiB

    return card_text(outcome_data(reply, companion))


def _from_event(data: dict[str, Any]) -> SignReply | None:
    """The outcome as a sign tool's event carried it, when the signer cannot be asked right now."""
    try:
        return SignReply.model_validate(
            {k: data.get(k) for k in ("status", "request_id", "rule_id")}, extra="ignore"
        )
    except ValueError:
        return None


class SignerWatch:
    def __init__(
        self,
        runtime: Runtime,
        notifier: Notifier,
        *,
        target: str | None = None,
        max_watched: int = 32,
        first_delay: float = 2.0,
        max_delay: float = 60.0,
        give_up_after: float = 86400.0,
    ) -> None:
        self.runtime = runtime
        self.notifier = notifier
        self.target = target
        self.max_watched = max_watched
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.give_up_after = give_up_after
        self._listener: asyncio.Task[None] | None = None
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._told: OrderedDict[tuple[str, str], None] = OrderedDict()  # (request, status) already sent
        state = runtime.services.state_dir
        self._told_path = state / TOLD_FILE if state is not None else None
        self._told.update(dict.fromkeys(self._load_told()))
        self._stopping = False

    @property
    def watching(self) -> list[str]:
        return list(self._watchers)

    async def start(self) -> None:
        if self._listener is None and self.runtime.services.signer is not None:
            self._stopping = False
            self._listener = asyncio.create_task(self._listen())
            for request_id in self._waiting_before_start():
                await self._resume(request_id)

    def _waiting_before_start(self) -> list[str]:
        """Request ids that recent sessions recorded as waiting for the companion (the bot's own
        tool results, never the model's text)."""
        sessions = self.runtime.sessions
        cutoff = time.time() - RESUME_WINDOW
        written = [(p.stat().st_mtime, p) for p in sessions.directory.glob("*.jsonl")]
        recent = sorted(((m, p) for m, p in written if m >= cutoff), reverse=True)[:RESUME_SESSIONS]
        found: dict[str, None] = {}
        for _, path in recent:
            try:
                messages = sessions.open(unquote(path.name.removesuffix(".jsonl"))).messages
            except (OSError, ValueError) as exc:
                log.info("session %s skipped while resuming: %s", path.name, type(exc).__name__)
                continue
            for data in tool_result_data(messages):
                if data.get("status") == PENDING and isinstance(data.get("request_id"), str):
                    found[data["request_id"]] = None
        return list(found)[: self.max_watched]

    async def _resume(self, request_id: str) -> None:
        """Tell a result that arrived while the bot was down; follow one still waiting, quietly."""
        reply = await self._status(request_id)
        if reply is None or reply.status is PENDING:
            if request_id not in self._watchers:
                self._watch(request_id)
        else:
            await self._tell(request_id, reply)

    def _watch(self, request_id: str) -> None:
        task = asyncio.create_task(self._follow(request_id))
        self._watchers[request_id] = task
        task.add_done_callback(lambda _: self._watchers.pop(request_id, None))

    async def stop(self) -> None:
        self._stopping = True  # asyncio.wait_for can swallow a cancel (bpo-42130): loops check this too
        tasks = [t for t in (self._listener, *self._watchers.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._listener = None
        self._watchers.clear()

    async def _listen(self) -> None:
        events = self.runtime.events
        seen = events.last_seq
        while not self._stopping:
            await events.wait(seen, 1.0)
            latest = events.last_seq
            for event in events.poll(seen, limit=10_000, type="signer"):
                if event.seq <= latest and event.name == "sign.outcome":
                    await self._outcome(dict(event.data))
            seen = latest

    async def _outcome(self, data: dict[str, Any]) -> None:
        request_id = data.get("request_id")
        if not isinstance(request_id, str):
            return
        reply = await self._status(request_id) or _from_event(data)
        if reply is None:
            return
        if data.get("shown") is True and reply.status == data.get("status"):
            self._remember(request_id, reply.status.value)  # the chat showed the card: one outcome, one card
        else:
            await self._tell(request_id, reply)
        if reply.status is not PENDING or request_id in self._watchers:
            return
        if len(self._watchers) >= self.max_watched:
            await self.notifier.notify(
                f"{len(self._watchers)} requests are already being followed, so this "
                "one is not: /approvals shows where it stands.",
                self.target,
            )
            return
        self._watch(request_id)

    async def _follow(self, request_id: str) -> None:
        delay = self.first_delay
        deadline = time.monotonic() + self.give_up_after
        while not self._stopping and time.monotonic() < deadline:
            await asyncio.sleep(delay)
            reply = await self._status(request_id)
            if reply is not None and reply.status is not PENDING:
                await self._tell(request_id, reply)
                return
            delay = min(delay * 2, self.max_delay)
        log.info("stopped following signer request %s", request_id)

    async def _status(self, request_id: str) -> SignReply | None:
        signer = self.runtime.services.signer
        if signer is None:
            return None
        try:
            return await signer.call_as(SignReply, "sign.status", {"request_id": request_id})
        except Exception as exc:  # noqa: BLE001 - the signer may be restarting: try again later
            log.info("sign.status %s failed: %s", request_id, type(exc).__name__)
            return None

    def _remember(self, request_id: str, status: str) -> bool:
        """Note that this outcome has been told; False if it already was."""
        key = (request_id, status)
        if key in self._told:
            return False
        self._told[key] = None
        while len(self._told) > MAX_REMEMBERED:
            self._told.popitem(last=False)
        self._save_told()
        return True

    async def _tell(self, request_id: str, reply: SignReply) -> None:
        key = (request_id, reply.status.value)
        if not self._remember(*key):
            return
        self.runtime.events.emit("signer", "sign.notified", {"request_id": request_id, "status": key[1]})
        public = (reply.tx_hash,) if reply.tx_hash is not None else ()
        companion = Companion(app_url=self.runtime.services.companion_app_url)
        await self.notifier.notify(describe(reply, companion), self.target, public=public)

    def _load_told(self) -> list[tuple[str, str]]:
        if self._told_path is None:
            return []
        try:
            pairs = json.loads(self._told_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        told = [(str(p[0]), str(p[1])) for p in pairs if isinstance(p, list) and len(p) == 2]
        return told[-MAX_REMEMBERED:]

    def _save_told(self) -> None:
        if self._told_path is None:
            return
        try:
            write_private_file(self._told_path, json.dumps([list(k) for k in self._told]).encode())
        except OSError as exc:
            log.warning("could not remember signer notices: %s", type(exc).__name__)
