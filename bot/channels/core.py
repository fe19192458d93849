"""The bot's front door: one inbound message in, one reply out, whatever the channel.

Order matters and is the same for every channel: drop redelivered messages, take the session's
lock (one message at a time), answer slash commands without the model, and only then run the
agent. Without LLM credentials the bot still answers commands, so the signing path works offline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot.agent.loop import CANCEL_REASON, Agent, RunOutcome
from bot.agent.sink import ReplySink
from bot.channels.base import Inbound
from bot.channels.one_message import OneMessagePerAction
from bot.observability.events import EventBus
from bot.observability.metrics import best_effort
from bot.security.redact import redact_message
from bot.sessions import SessionStore, session_lock
from bot.sessions.turns import preview

WITHHELD = (
    "Your message held what looks like a secret (a private key, a seed phrase, an API key or token). "
    "It was replaced by [REDACTED] before anything was stored or sent to the model. Never paste "
    "keys into a chat: the signer holds the keys this bot uses."
)
INTERRUPTED_NOTE = (
    'Your last request was cut off by a restart before it finished: "{preview}". It was '
    "withdrawn and nothing more will be done for it; send it again if you still want it. "
    "Check /approvals and /status for anything it may already have started."
)
NO_LLM_HINT = (
    "No language model is set up, so I can only run commands. Run `owlia auth setup` "
    "(or set ANTHROPIC_API_KEY / OPENAI_API_KEY) to chat. Try /help, /balance or /send."
)


@dataclass
class Handled:
    """What became of one inbound message."""

    status: str  # duplicate | command | agent | no_llm | cancelled
    reply: str = ""
    run: RunOutcome | None = None


AgentFactory = Callable[[], Awaitable[Agent | None]]


class BotCore:
    def __init__(
        self,
        sessions: SessionStore,
        agent: AgentFactory,
        commands: Any,
        events: EventBus,
        metrics: Any | None = None,
    ) -> None:
        self.sessions = sessions
        self.agent = agent
        self.commands = commands
        self.events = events
        self.metrics = metrics
        self._running: dict[str, asyncio.Task[RunOutcome]] = {}
        self.observers: list[Callable[[Inbound], None]] = []  # e.g. the notifier's "last active DM"

    async def handle(self, inbound: Inbound, sink: ReplySink) -> Handled:
        sink = OneMessagePerAction(sink)
        key = inbound.session_key
        if _command_name(inbound.text) == "/cancel":  # must not wait for the lock the run holds
            # the stopped run says "Stopped." itself: one message, not two
            reply = "" if self.cancel(key) else "Nothing is running."
            await sink.done(reply)
            return Handled("command", reply)
        async with session_lock(key):
            session = self.sessions.open(key)
            if inbound.message_id and session.seen(inbound.message_id):
                self.events.emit("channel", "message.duplicate", {"channel": inbound.channel, "session": key})
                return Handled("duplicate")
            self._count(inbound)
            interrupted = session.take_interrupted()
            if interrupted is not None:
                await sink.notice(INTERRUPTED_NOTE.format(preview=preview(interrupted)))
            text = redact_message(inbound.text.strip())
            if text != inbound.text.strip():  # a pasted key never reaches the session file or the model
                await sink.notice(WITHHELD)
            if text.startswith("/"):
                reply = await self.commands.dispatch(text, session, inbound, sink)
                await sink.done(reply)
                return Handled("command", reply)
            agent = await self.agent()
            if agent is None:
                await sink.done(NO_LLM_HINT)
                return Handled("no_llm", NO_LLM_HINT)
            task = asyncio.ensure_future(
                agent.run(session, text, sink, kind=inbound.kind, channel=inbound.channel, peer=inbound.peer)
            )
            self._running[key] = task
            try:
                run = await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not task.cancelled() or (current is not None and current.cancelling()):
                    raise  # the whole handler is being cancelled (shutdown), not just this run
                await sink.done("Stopped.")
                return Handled("cancelled", "Stopped.")
            finally:
                self._running.pop(key, None)
            await sink.done(run.text)
            return Handled("agent", run.text, run)

    def cancel(self, session_key: str) -> bool:
        """Stop the run in flight for this chat; a tool call it interrupts is recorded as outcome unknown."""
        task = self._running.get(session_key)
        if task is None or task.done():
            return False
        task.cancel(CANCEL_REASON)
        return True

    def _count(self, inbound: Inbound) -> None:
        for observe in self.observers:
            observe(inbound)
        self.events.emit(
            "channel",
            "message.received",
            {
                "channel": inbound.channel,
                "kind": inbound.kind.value,
                "lag": round(time.time() - inbound.received_at, 4) if inbound.received_at else None,
            },
        )
        if self.metrics is not None:
            with best_effort():
                self.metrics.inc("owlia_messages_total", channel=inbound.channel)


def _command_name(text: str) -> str:
    words = text.strip().split(maxsplit=1)
    return words[0].split("@", 1)[0].lower() if words and words[0].startswith("/") else ""
