"""Run the model's tool calls under the tier rules.

Default deny: a call runs only if its tool is visible in this context, its arguments validate and
hold no secrets, and — for `write` tools — the same user confirmed it in the same chat. `sign` tools
need no confirmation here because they cannot sign: they hand an intent to the signer, whose
decision is final. Reads run concurrently; writes and signs run one at a time, in the model's order,
and a read listed after a write waits for it. Every call is audited before and after.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from bot.config import AgentSettings
from bot.llm.types import ToolCall, ToolResult
from bot.observability.audit import BotAudit
from bot.observability.metrics import best_effort
from bot.security.redact import find_secrets, redact_obj
from bot.tools.base import Level, Tool, ToolContext, ToolFailure, ToolOutput
from bot.tools.registry import ToolRegistry
from bot.tools.signer_words import SIGNER_DOWN
from policies.kernel.text import visible
from signer.wire.exchange import SignerUnavailable

log = logging.getLogger(__name__)


class Confirmer(Protocol):
    async def confirm(self, text: str, timeout: float) -> bool:
        """Ask the user who sent the message, in the same chat; False on no, timeout or doubt."""
        ...


@dataclass(frozen=True)
class ToolEvent:
    """What a channel hears about a call: `started` before it runs, `finished` with its output."""

    phase: Literal["started", "finished"]
    call_id: str
    name: str
    level: Level | None
    outcome: str = ""
    output: ToolOutput | None = None


EventSink = Callable[[ToolEvent], Awaitable[None]]


@dataclass(frozen=True)
class Executed:
    call: ToolCall
    level: Level | None
    outcome: str
    result: ToolResult
    data: Mapping[str, Any] | None = None


def _problems(exc: ValidationError, args: type[Any] | None = None) -> str:
    """Each problem in words: a pattern is described by its field, never shown as a regex (the
    model quotes tool errors to the user)."""
    parts = []
    fields = getattr(args, "model_fields", {})
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        message = err["msg"]
        if err["type"] == "string_pattern_mismatch":
            field = fields.get(err["loc"][0]) if err["loc"] else None
            wanted = getattr(field, "description", None)
            message = f"is not in the expected form ({wanted})" if wanted else "is not in the expected form"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... cut: {len(text) - limit} more characters not shown]"


class ToolExecutor:
    def __init__(
        self, registry: ToolRegistry, settings: AgentSettings, audit: BotAudit, metrics: Any | None = None
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.audit = audit
        self.metrics = metrics

    async def execute(
        self,
        ctx: ToolContext,
        calls: Sequence[ToolCall],
        confirmer: Confirmer | None,
        on_event: EventSink | None = None,
    ) -> list[Executed]:
        """Results in the order of `calls`; reads batched concurrently between serial writes/signs."""
        if on_event is not None and not ctx.shown_in_chat:
            ctx = replace(ctx, shown_in_chat=True)
        results: list[Executed | None] = [None] * len(calls)
        found = [self.registry.lookup(call.name, ctx.kind, ctx.channel) for call in calls]
        batch: list[int] = []

        async def flush() -> None:
            done = await asyncio.gather(
                *(self._one(ctx, calls[i], found[i], confirmer, on_event) for i in batch)
            )
            for i, item in zip(batch, done):
                results[i] = item
            batch.clear()

        for index, call in enumerate(calls):
            tool = found[index]
            if tool is not None and tool.level is Level.READ:
                batch.append(index)
                continue
            await flush()
            results[index] = await self._one(ctx, call, found[index], confirmer, on_event)
        await flush()
        return [r for r in results if r is not None]

    async def _one(
        self,
        ctx: ToolContext,
        call: ToolCall,
        found: Tool | None,
        confirmer: Confirmer | None,
        on_event: EventSink | None,
    ) -> Executed:
        started = time.monotonic()
        level = found.level if found else None
        self.audit.record(
            "tool.requested",
            run_id=ctx.run_id,
            session=ctx.session_key,
            context=ctx.kind.value,
            tool=call.name,
            call_id=call.id,
            level=level.value if level else None,
            arguments=dict(call.arguments),
        )
        if on_event is not None:
            await on_event(ToolEvent("started", call.id, call.name, level))
        outcome, output = await self._decide_and_run(ctx, call, found, confirmer)
        if found is not None and found.level is Level.SIGN and output.data:
            outcome = str(output.data.get("status", outcome))
        elapsed = time.monotonic() - started
        self.audit.record(
            "tool.finished",
            run_id=ctx.run_id,
            session=ctx.session_key,
            tool=call.name,
            call_id=call.id,
            outcome=outcome,
            seconds=round(elapsed, 4),
            result=cut(output.content, 2000),
            data=dict(output.data or {}),
        )
        ctx.services.events.emit(
            "tool",
            "tool.call",
            {
                "tool": call.name,
                "level": level.value if level else None,
                "outcome": outcome,
                "seconds": round(elapsed, 4),
                "session": ctx.session_key,
                "context": ctx.kind.value,
            },
        )
        self._measure(call.name, level, outcome, elapsed)
        if on_event is not None:
            await on_event(ToolEvent("finished", call.id, call.name, level, outcome, output))
        content = cut(output.content, self.settings.tool_result_chars)
        result = ToolResult(call.id, content, is_error=output.is_error, untrusted=output.untrusted)
        return Executed(call, level, outcome, result, output.data)

    async def _decide_and_run(
        self, ctx: ToolContext, call: ToolCall, found: Tool | None, confirmer: Confirmer | None
    ) -> tuple[str, ToolOutput]:
        if found is None:
            return "unavailable", _error(f"tool {call.name!r} is not available here")
        if call.error:
            return "invalid", _error(call.error)
        try:
            args = found.args.model_validate(dict(call.arguments))
        except ValidationError as exc:
            return "invalid", _error(f"invalid arguments for {call.name}: {_problems(exc, found.args)}")
        secret = _secret_in(call.arguments)
        if secret:
            return "secret", _error(
                f"refused: the arguments contain what looks like a secret ({secret}); "
                "secrets never leave through tools",
                for_the_user=True,
            )
        if found.level is Level.WRITE:
            if confirmer is None:
                return "declined", _error(
                    f"{call.name} needs the user's confirmation, which this context cannot ask"
                )
            text = found.confirmation_text(args)
            if found.confirmation_note is not None:
                note = await found.confirmation_note(ctx, args)
                text = f"{text}\n{note}" if note else text
            text = visible(text, keep="\n\t")  # every channel shows what is confirmed, hidden characters too
            self.audit.record(
                "tool.confirm_asked", run_id=ctx.run_id, tool=call.name, call_id=call.id, text=text
            )
            try:
                approved = await confirmer.confirm(text, self.settings.confirm_timeout)
            except Exception:  # a broken channel is a "no", never a "yes"
                log.exception("confirmation failed for %s", call.name)
                approved = False
            self.audit.record(
                "tool.confirm_answer", run_id=ctx.run_id, tool=call.name, call_id=call.id, approved=approved
            )
            if not approved:
                return "declined", _error("the user declined (or did not answer); nothing was done")
        timeout = (
            min(found.timeout, self.settings.tool_timeout) if found.level is Level.READ else found.timeout
        )
        try:
            output = await asyncio.wait_for(found.handler(replace(ctx, call_id=call.id), args), timeout)
        except asyncio.TimeoutError:
            return "timeout", _error(f"{call.name} did not finish within {timeout:g}s")
        except ToolFailure as exc:
            return "error", _error(str(exc), for_the_user=exc.for_the_user)
        except Exception as exc:
            if isinstance(exc, SignerUnavailable):  # whatever the tool was doing: same words, no socket path
                return "error", _error(SIGNER_DOWN)
            log.exception("tool %s crashed", call.name)
            return "error", _error(f"{call.name} failed with an internal error (details in the bot log)")
        return ("error" if output.is_error else "ok"), output

    def _measure(self, name: str, level: Level | None, outcome: str, seconds: float) -> None:
        if self.metrics is None:
            return
        tier = level.value if level else "none"
        with best_effort():
            self.metrics.inc("owlia_tool_calls_total", tool=name, level=tier, outcome=outcome)
            self.metrics.observe("owlia_tool_seconds", seconds, level=tier)


def _error(message: str, *, for_the_user: bool = False) -> ToolOutput:
    return ToolOutput(message, untrusted=False, is_error=True, for_the_user=for_the_user)


def _secret_in(arguments: Mapping[str, Any]) -> str | None:
    """The kind of secret found in the arguments, if any (public hashes under hash-named keys pass)."""
    plain = dict(arguments)
    if redact_obj(plain) == plain:
        return None
    for value in _strings(plain):
        found = find_secrets(value)
        if found:
            return found[0].kind
    return "secret-named field"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return [json.dumps(value)] if value is not None else []
