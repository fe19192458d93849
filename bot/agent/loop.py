"""One run: an inbound message, up to `max_rounds` model turns with tool calls, one reply.

Every stop reason is handled on purpose: `end` finishes; `tool_use` runs the calls and loops;
`max_tokens` and `refusal` finish with a note and never run calls from a cut-off answer; an LLM
error finishes with a message that says what happened. Nothing here retries a run: once a write
or sign tool ran, the user decides what happens next.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Protocol

from bot.agent.convert import call_part, result_part, to_messages, tool_result_data
from bot.agent.guard import StreamGuard
from bot.agent.sink import ReplySink
from bot.config import AgentSettings
from bot.llm.errors import AllProfilesUnavailable, LLMError, ProfileFailed, StreamInterrupted
from bot.llm.types import Completion, Message, Request, StopReason, TextPart, ToolCall, ToolResult
from bot.observability.metrics import best_effort
from bot.security.redact import redact
from bot.sessions.records import MessageRecord
from bot.sessions.store import Session
from bot.sessions.turns import NOT_RUN_PREFIX, Withdrawn, process_owner, withdrawn_refs
from bot.tools.base import ContextKind, Level, Tool, ToolContext
from bot.tools.executor import Executed, ToolExecutor
from bot.tools.provenance import Provenance
from bot.tools.services import Services

NOT_RUN_CUT = f"{NOT_RUN_PREFIX} the answer was cut off (max tokens) before this call was complete"
NOT_RUN_ROUNDS = f"{NOT_RUN_PREFIX} the tool round limit for this message was reached"
CANCEL_REASON = "owlia:cancel"
"""The message `BotCore.cancel` cancels a run with, so the run tells /cancel from a shutdown."""


class LLM(Protocol):
    async def complete(self, request: Request, on_text: Callable[[str], Any] | None = None) -> Completion: ...


@dataclass
class RunOutcome:
    run_id: str
    stop: str  # end | max_rounds | max_tokens | refusal | error | llm_unavailable
    text: str = ""
    rounds: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tools: list[Executed] = field(default_factory=list)
    fallback_profile: str | None = None
    error: str | None = None

    @property
    def side_effects(self) -> bool:
        """True once a write or sign tool actually ran: such a run is never retried automatically."""
        return any(
            e.level in (Level.WRITE, Level.SIGN)
            and e.outcome not in ("unavailable", "invalid", "secret", "declined")
            for e in self.tools
        )


class GuardedReply:
    """The reply text as the channel sees it: every piece passes the secret guard first."""

    def __init__(self, sink: ReplySink, guard: StreamGuard) -> None:
        self.sink, self.guard = sink, guard
        self.parts: list[str] = []

    async def _send(self, safe: str) -> None:
        if safe:
            self.parts.append(safe)
            await self.sink.text(safe)

    async def feed(self, delta: str) -> None:
        await self._send(self.guard.feed(delta))

    async def flush(self) -> None:
        await self._send(self.guard.flush())

    @property
    def text(self) -> str:
        return "".join(self.parts)


PromptBuilder = Callable[[Sequence[Tool], ContextKind, str], str]


def provenance_of(records: Sequence[MessageRecord]) -> Provenance:
    """The addresses the user wrote: their own messages only (not summaries, tools or pages)."""
    seen = Provenance()
    withdrawn = withdrawn_refs(records)
    for record in records:
        if record.role == "user" and record.kind == "normal" and record.id not in withdrawn:
            for part in record.parts:
                if part.get("type") == "text":
                    seen.saw_user_text(str(part.get("text", "")))
    return seen


class Agent:
    def __init__(
        self,
        llm: LLM,
        executor: ToolExecutor,
        services: Services,
        settings: AgentSettings,
        build_prompt: PromptBuilder,
        *,
        max_tokens: int = 4096,
        metrics: Any | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        self.llm = llm
        self.executor = executor
        self.services = services
        self.settings = settings
        self.build_prompt = build_prompt
        self.max_tokens = max_tokens
        self.metrics = metrics

    async def run(
        self, session: Session, text: str, sink: ReplySink, *, kind: ContextKind, channel: str, peer: str
    ) -> RunOutcome:
        run = RunOutcome(run_id=uuid.uuid4().hex[:16], stop="error")
        started = time.monotonic()
        turn = session.append("user", [{"type": "text", "text": text}], owner=process_owner())
        records = session.history(self.settings.history_turns)
        ctx = ToolContext(
            session.key,
            channel,
            peer,
            kind,
            self.services,
            run_id=run.run_id,
            provenance=provenance_of(records),
        )
        tools = self.executor.registry.visible(kind, channel)
        request = Request(
            tuple(to_messages(records)),
            system=self.build_prompt(tools, kind, channel),
            tools=tuple(t.spec() for t in tools),
            max_tokens=self.max_tokens,
            note=time_note(self.clock()),
        )
        reply = GuardedReply(sink, StreamGuard(allow=_public_hashes(records)))
        self.services.events.emit(
            "agent", "run.started", {"run_id": run.run_id, "session": session.key, "context": kind.value}
        )
        try:
            await self._rounds(run, session, request, ctx, sink, reply, turn.id)
        except asyncio.CancelledError as exc:
            why = Withdrawn.CANCELLED if CANCEL_REASON in exc.args else Withdrawn.INTERRUPTED
            session.withdraw(turn.id, why)
            run.stop = why.value
            raise
        finally:
            await reply.flush()
            run.text = reply.text
            elapsed = time.monotonic() - started
            self.services.events.emit(
                "agent",
                "run.finished",
                {
                    "run_id": run.run_id,
                    "session": session.key,
                    "stop": run.stop,
                    "rounds": run.rounds,
                    "tools": len(run.tools),
                    "seconds": round(elapsed, 4),
                    "input_tokens": run.input_tokens,
                    "output_tokens": run.output_tokens,
                    "fallback": run.fallback_profile,
                },
            )
            self._measure(run, elapsed)
        return run

    async def _rounds(
        self,
        run: RunOutcome,
        session: Session,
        request: Request,
        ctx: ToolContext,
        sink: ReplySink,
        reply: GuardedReply,
        turn_id: str,
    ) -> None:
        guard = reply.guard
        messages = list(request.messages)
        while True:
            try:
                completion = await self.llm.complete(
                    replace(request, messages=tuple(messages)), on_text=reply.feed
                )
            except LLMError as exc:
                run.stop, run.error = _llm_failure(exc)
                if run.rounds == 0:  # nothing was done for it: the user asks again, never a leftover
                    session.withdraw(turn_id, Withdrawn.FAILED)
                await sink.notice(run.error)
                return
            run.rounds += 1
            run.input_tokens += completion.usage.input_tokens
            run.output_tokens += completion.usage.output_tokens
            session.add_usage(completion.usage.input_tokens, completion.usage.output_tokens, completion.model)
            await reply.flush()
            if completion.fallback_used and run.fallback_profile is None:
                run.fallback_profile = completion.profile
                await sink.notice(
                    f"(answered by the fallback model profile '{completion.profile}': "
                    "the first choice is unavailable right now)"
                )
            # stored and replayed redacted: the model never sees its own leaked secret again either
            said = redact(completion.text, allow=guard.allow) if completion.text else ""
            assistant = Message("assistant", (*((TextPart(said),) if said else ()), *completion.tool_calls))
            session.append(
                "assistant",
                [
                    *([{"type": "text", "text": said}] if said else []),
                    *(call_part(c) for c in completion.tool_calls),
                ],
            )
            messages.append(assistant)
            calls = completion.tool_calls
            reason = completion.stop_reason
            if reason is StopReason.MAX_TOKENS:
                self._unrun(session, messages, calls, NOT_RUN_CUT)
                run.stop = "max_tokens"
                await sink.notice("(the answer was cut off at the length limit; ask me to continue)")
                return
            if reason is StopReason.REFUSAL:
                self._unrun(session, messages, calls, f"{NOT_RUN_PREFIX} the model declined")
                run.stop = "refusal"
                await sink.notice("(the model declined to answer this)")
                return
            if reason is StopReason.ERROR:
                self._unrun(session, messages, calls, f"{NOT_RUN_PREFIX} the model reported an error")
                run.stop, run.error = "error", "the model stopped with an error"
                await sink.notice("(the model stopped with an error; nothing more was done)")
                return
            if not calls:
                run.stop = "end"
                return
            if run.rounds >= self.settings.max_rounds:
                self._unrun(session, messages, calls, NOT_RUN_ROUNDS)
                run.stop = "max_rounds"
                await sink.notice(
                    f"(stopped: this message used the limit of {self.settings.max_rounds} tool "
                    "rounds; the last requested tools were not run)"
                )
                return
            executed = await self.executor.execute(ctx, calls, sink, on_event=sink.tool_event)
            run.tools.extend(executed)
            for item in executed:
                if item.result.untrusted is False and item.data:
                    guard.allow_values(str(v) for v in item.data.values())
            session.append("tool", [result_part(e.result, e.call.name, e.data) for e in executed])
            messages.append(Message("user", tuple(e.result for e in executed)))

    def _unrun(self, session: Session, messages: list[Message], calls: Sequence[ToolCall], why: str) -> None:
        """Answer calls that will not run, so the transcript stays well-formed and honest."""
        if not calls:
            return
        results = [ToolResult(c.id, why, is_error=True, untrusted=False) for c in calls]
        session.append("tool", [result_part(r, c.name) for r, c in zip(results, calls)])
        messages.append(Message("user", tuple(results)))

    def _measure(self, run: RunOutcome, seconds: float) -> None:
        if self.metrics is None:
            return
        with best_effort():
            self.metrics.inc("owlia_agent_runs_total", outcome=run.stop)
            self.metrics.observe("owlia_agent_run_seconds", seconds)
            self.metrics.inc("owlia_llm_tokens_total", run.input_tokens, direction="input")
            self.metrics.inc("owlia_llm_tokens_total", run.output_tokens, direction="output")
            if run.fallback_profile:
                self.metrics.inc("owlia_llm_fallbacks_total")


def time_note(now: float | None = None) -> str:
    """The current time, for the end of the request (after the cached prefix: it changes every minute)."""
    stamp = datetime.fromtimestamp(time.time() if now is None else now, timezone.utc)
    return f"(current time: {stamp:%Y-%m-%d %H:%M} UTC)"


def _llm_failure(exc: LLMError) -> tuple[str, str]:
    if isinstance(exc, AllProfilesUnavailable):
        return "llm_unavailable", f"No language model could answer right now ({exc}). Try again later."
    if isinstance(exc, StreamInterrupted):
        return "error", "The model's answer broke off midway; nothing more was done. Please ask again."
    if isinstance(exc, ProfileFailed):
        return "error", f"The language model refused the request: {exc}. Check `owlia auth status`."
    return "error", f"The language model failed: {exc}"


def _public_hashes(records: Sequence[MessageRecord]) -> set[str]:
    """Values tools returned as trusted data (tx hashes, request ids): never mistaken for keys."""
    return {v for data in tool_result_data(records) for v in data.values() if isinstance(v, str)}
