"""OpenAI Chat Completions adapter, also used for any OpenAI-compatible server via `base_url`.

Chat Completions has no tool-result content block: our user-role ToolResult parts become role
"tool" messages placed right after the assistant turn that made the calls, as the API requires.
Tool-call arguments stream as string fragments keyed by `index`; we assemble them per index and
emit each call once the choice finishes. The wire format (POST {base_url}/chat/completions with
`stream: true`, server-sent `data:` chunks ending in `[DONE]`) is spoken here directly on httpx:
the bot carries no vendor SDK.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from bot.llm.errors import stream_error
from bot.llm.transport import (
    EventStream,
    StreamingProvider,
    StreamLimits,
    finished,
    get,
    json_object,
    protocol_error,
)
from bot.llm.types import (
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

DEFAULT_BASE_URL = "https://api.openai.com/v1"

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
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                    }
                    for c in calls
                ]
            out.append(entry)
            continue
        for part in message.parts:
            if isinstance(part, ToolResult):
                content = render_tool_result(part)
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": f"ERROR: {content}" if part.is_error else content,
                    }
                )
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


class OpenAIProvider(StreamingProvider):
    """Streams one Chat Completions call; `base_url` ends where `/chat/completions` is appended
    (OpenAI's own is https://api.openai.com/v1).

    `max_tokens_field`: OpenAI's own API wants `max_completion_tokens` (reasoning models refuse
    `max_tokens`), while many compatible servers only know `max_tokens`.
    """

    path = "/chat/completions"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_tokens_field: str = "max_completion_tokens",
        limits: StreamLimits = StreamLimits(),
    ) -> None:
        self._base_url = base_url
        self._max_tokens_field = max_tokens_field
        super().__init__(
            base_url=base_url or DEFAULT_BASE_URL,
            timeout=timeout,
            headers={"authorization": f"Bearer {api_key}"},
            secrets=(api_key,),
            limits=limits,
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self._base_url!r})"

    def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            # the note comes last: everything before it is the prefix the provider's cache matches
            "messages": to_openai_messages(request.system, request.messages)
            + ([{"role": "user", "content": request.note}] if request.note else []),
            "stream": True,
            "stream_options": {"include_usage": True},
            self._max_tokens_field: request.max_tokens,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in request.tools
            ]
        return body

    async def _translate(self, events: EventStream) -> AsyncIterator[StreamEvent]:
        model = ""
        usage = Usage()
        stop: StopReason | None = None
        calls: dict[int, tuple[list[str], list[str], list[str]]] = {}  # index -> (id, name parts, fragments)
        async for sse in events:
            if sse.event not in ("message", "error"):
                continue  # named events are not part of Chat Completions: ignored
            if sse.data.strip() == "[DONE]":
                break
            chunk = json_object(sse.data, "chunk")
            if sse.event == "error" or chunk.get("error") is not None:  # a failure after the 200 header
                raise stream_error(chunk, secrets=self._secrets) from None
            model = get(chunk, "model", str, "chunk") or model
            counts = get(chunk, "usage", dict, "chunk")
            if counts is not None:
                details = get(counts, "prompt_tokens_details", dict, "usage", default={}) or {}
                usage = Usage(
                    get(counts, "prompt_tokens", int, "usage", default=0) or 0,
                    get(counts, "completion_tokens", int, "usage", default=0) or 0,
                    get(details, "cached_tokens", int, "usage", default=0) or 0,
                )
            choices = get(chunk, "choices", list, "chunk") or []
            if not choices:
                continue
            choice = choices[0]
            if not isinstance(choice, dict):
                raise protocol_error("chunk.choices[0] is not a JSON object")
            delta = get(choice, "delta", dict, "choice")
            if delta is not None:
                content = get(delta, "content", str, "delta")
                if content:
                    yield TextDelta(content)
                for tc in get(delta, "tool_calls", list, "delta") or ():
                    if not isinstance(tc, dict):
                        raise protocol_error("delta.tool_calls[] is not a JSON object")
                    slot = calls.setdefault(_call_index(tc, calls), ([], [], []))
                    call_id = get(tc, "id", str, "tool_call")
                    if call_id:
                        slot[0][:] = [call_id]
                    function = get(tc, "function", dict, "tool_call")
                    if function is not None:
                        slot[1].append(get(function, "name", str, "function") or "")
                        slot[2].append(get(function, "arguments", str, "function") or "")
            finish = get(choice, "finish_reason", str, "choice")
            if finish is not None:
                stop = map_finish_reason(finish)
                for index in sorted(calls):
                    ids, names, fragments = calls[index]
                    arguments, error = parse_tool_arguments("".join(fragments))
                    yield ToolCallReady(ToolCall("".join(ids), "".join(names), arguments, error))
                calls.clear()
        yield await finished(events, stop, usage, model)


def _call_index(delta: dict[str, Any], calls: dict[int, Any]) -> int:
    """The call a tool-call delta continues: its `index`; some compatible servers leave it out, and
    then a delta with an id opens the next call and one without continues the latest."""
    index = get(delta, "index", int, "tool_call")
    if index is not None:
        return index
    if delta.get("id") or not calls:
        return len(calls)
    return max(calls)
