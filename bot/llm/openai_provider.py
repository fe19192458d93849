"""OpenAI Chat Completions adapter, also used for any OpenAI-compatible server via `base_url`.

Chat Completions has no tool-result content block: our user-role ToolResult parts become role
"tool" messages placed right after the assistant turn that made the calls, as the API requires.
Tool-call arguments stream as string fragments keyed by `index`; we assemble them per index and
emit each call once the choice finishes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai

from bot.llm.errors import ProviderError, classify
from bot.llm.types import (
    Finished,
    Message,
    Request,
    StopReason,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallReady,
    ToolResult,
    Usage,
    parse_tool_arguments,
    render_tool_result,
)

FINISH_REASONS = {
    "stop": StopReason.END,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


def map_finish_reason(reason: str | None) -> StopReason:
    return FINISH_REASONS.get(reason or "", StopReason.ERROR)


def to_openai_messages(system: str, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        texts = [p.text for p in message.parts if isinstance(p, TextPart)]
        if message.role == "assistant":
            calls = [p for p in message.parts if isinstance(p, ToolCall)]
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
            if calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))}}
                    for c in calls
                ]
            out.append(entry)
            continue
        for part in message.parts:
            if isinstance(part, ToolResult):
                content = render_tool_result(part)
                out.append({"role": "tool", "tool_call_id": part.tool_call_id,
                            "content": f"ERROR: {content}" if part.is_error else content})
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


class OpenAIProvider:
    """Streams one Chat Completions call.

    `max_tokens_field`: OpenAI's own API wants `max_completion_tokens` (reasoning models refuse
    `max_tokens`), while many compatible servers only know `max_tokens`.
    """

    def __init__(self, *, api_key: str, base_url: str | None = None, timeout: float = 120.0,
                 max_tokens_field: str = "max_completion_tokens") -> None:
        self._secrets = (api_key,)
        self._base_url = base_url
        self._max_tokens_field = max_tokens_field
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self._base_url!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": to_openai_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            self._max_tokens_field: request.max_tokens,
        }
        if request.tools:
            kwargs["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": dict(t.parameters)}}
                for t in request.tools]
        try:
            chunks = await self._client.chat.completions.create(**kwargs)
            async with chunks:
                async for event in self._translate(chunks):
                    yield event
        except (openai.OpenAIError, httpx2.TransportError) as exc:  # the SDK wraps request errors, not mid-stream ones
            raise classify(exc, secrets=self._secrets) from None

    async def _translate(self, chunks: Any) -> AsyncIterator[StreamEvent]:
        model = ""
        usage = Usage()
        stop: StopReason | None = None
        calls: dict[int, list[Any]] = {}  # index -> [id, name, fragments]
        async for chunk in chunks:
            model = chunk.model or model
            if chunk.usage is not None:
                usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    yield TextDelta(delta.content)
                for tc in delta.tool_calls or ():
                    slot = calls.setdefault(tc.index, ["", "", []])
                    if tc.id:
                        slot[0] = tc.id
                    if tc.function is not None:
                        if tc.function.name:
                            slot[1] += tc.function.name
                        if tc.function.arguments:
                            slot[2].append(tc.function.arguments)
            if choice.finish_reason is not None:
                stop = map_finish_reason(choice.finish_reason)
                for index in sorted(calls):
                    call_id, name, fragments = calls[index]
                    arguments, error = parse_tool_arguments("".join(fragments))
                    yield ToolCallReady(ToolCall(call_id, name, arguments, error))
                calls.clear()
        if stop is None:  # connection closed before the provider said it was done
            raise ProviderError("the provider's stream ended before the answer was complete",
                                retryable=True, error_type="truncated")
        yield Finished(stop, usage, model)
