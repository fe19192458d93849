"""Anthropic Messages API adapter: our messages in, our stream events out.

Speaks the wire format itself (POST /v1/messages with `stream: true`, server-sent events) on
httpx, so that we see every `input_json_delta` and decide ourselves what to do with malformed
tool arguments, and the bot carries no vendor SDK. There are no retries: failover between profiles
is the router's job, and hidden retries would hold a rate-limited profile instead of moving on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from bot.llm.errors import stream_error
from bot.llm.transport import EventStream, StreamingProvider, StreamLimits, finished, get, json_object, need
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
STOP_REASONS = {
    "end_turn": StopReason.END,
    "stop_sequence": StopReason.END,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
}

OAUTH_BETA = "oauth-2025-04-20"


def map_stop_reason(reason: str | None) -> StopReason:
    return STOP_REASONS.get(reason or "", StopReason.ERROR)


def to_anthropic_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ToolCall):
                blocks.append(
                    {"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.arguments)}
                )
            elif isinstance(part, ToolResult):
                blocks.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": part.tool_call_id,
                        "content": render_tool_result(part),
                        "is_error": part.is_error,
                    }
                )
        out.append({"role": message.role, "content": blocks})
    return out


EPHEMERAL = {"type": "ephemeral"}


def _conversation_breakpoints(messages: list[dict[str, Any]]) -> list[int]:
    """The latest message, and the user message before the latest user message: the previous turn
    wrote its cache there, so it is read back even when more than 20 blocks were added since."""
    if not messages or not messages[-1]["content"]:
        return []
    users = [i for i, m in enumerate(messages) if m["role"] == "user" and m["content"]]
    earlier = [i for i in users if i < len(messages) - 1]
    points = [len(messages) - 1]
    if len(earlier) >= 1 and earlier[-1] != points[0]:
        points.insert(0, earlier[-1])
    return points


class AnthropicProvider(StreamingProvider):
    """Streams one Messages API call. Auth is an API key (sent as `x-api-key`) or an OAuth token
    (`auth_token=`, sent as `Authorization: Bearer` with the OAuth beta flag); the tests pin what
    goes on the wire."""

    path = "/v1/messages"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        limits: StreamLimits = StreamLimits(),
    ) -> None:
        if (api_key is None) == (auth_token is None):
            raise ValueError("give exactly one of api_key or auth_token")
        self._auth = "api_key" if api_key is not None else "oauth"
        self._base_url = base_url
        headers = {"anthropic-version": API_VERSION}
        if api_key is not None:
            headers["x-api-key"] = api_key
        else:
            # OAuth (Claude subscription) tokens are accepted only with this beta flag; see bot/auth/anthropic_oauth.py
            headers["authorization"] = f"Bearer {auth_token}"
            headers["anthropic-beta"] = OAUTH_BETA
        super().__init__(
            base_url=base_url or DEFAULT_BASE_URL,
            timeout=timeout,
            headers=headers,
            secrets=(api_key, auth_token),
            limits=limits,
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(auth={self._auth!r}, base_url={self._base_url!r})"

    def _body(self, request: Request) -> dict[str, Any]:
        """Cache breakpoints (four at most, as the API allows): the last tool, the system prompt, the
        latest message and the user's message before it; `request.note` goes after them all."""
        messages = to_anthropic_messages(request.messages)
        for index in _conversation_breakpoints(messages):
            messages[index]["content"][-1]["cache_control"] = dict(EPHEMERAL)
        if request.note:
            if messages and messages[-1]["role"] == "user":
                messages[-1]["content"].append({"type": "text", "text": request.note})
            else:
                messages.append({"role": "user", "content": [{"type": "text", "text": request.note}]})
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
            "stream": True,
        }
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": dict(EPHEMERAL)}]
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in request.tools
            ]
            body["tools"][-1]["cache_control"] = dict(EPHEMERAL)
        return body

    async def _translate(self, events: EventStream) -> AsyncIterator[StreamEvent]:
        model = ""
        input_tokens = output_tokens = cache_read = cache_write = 0
        stop: StopReason | None = None
        tools: dict[int, tuple[str, str, list[str]]] = {}  # block index -> (id, name, json fragments)
        async for sse in events:
            kind = sse.event
            if kind not in _READ:
                continue  # ping, and event types newer than this code: ignored, as the API asks
            data = json_object(sse.data, kind)
            if kind == "error":
                raise stream_error(data, secrets=self._secrets) from None
            if kind == "message_stop":
                break  # the answer is complete: never wait on a peer that keeps the stream open
            if kind == "message_start":
                message = need(data, "message", dict, kind)
                model = get(message, "model", str, "message") or ""
                usage = get(message, "usage", dict, "message", default={}) or {}
                input_tokens = get(usage, "input_tokens", int, "usage", default=0) or 0
                output_tokens = get(usage, "output_tokens", int, "usage", default=0) or 0
                cache_read = get(usage, "cache_read_input_tokens", int, "usage", default=0) or 0
                cache_write = get(usage, "cache_creation_input_tokens", int, "usage", default=0) or 0
            elif kind == "content_block_start":
                index = need(data, "index", int, kind)
                block = need(data, "content_block", dict, kind)
                if get(block, "type", str, "content_block") == "tool_use":
                    tools[index] = (
                        need(block, "id", str, "tool_use"),
                        need(block, "name", str, "tool_use"),
                        [],
                    )
            elif kind == "content_block_delta":
                index = need(data, "index", int, kind)
                delta = need(data, "delta", dict, kind)
                delta_type = get(delta, "type", str, "delta")
                if delta_type == "text_delta":
                    text = get(delta, "text", str, "text_delta")
                    if text:
                        yield TextDelta(text)
                elif delta_type == "input_json_delta" and index in tools:
                    tools[index][2].append(get(delta, "partial_json", str, "input_json_delta") or "")
            elif kind == "content_block_stop":
                index = need(data, "index", int, kind)
                if index in tools:
                    call_id, name, fragments = tools.pop(index)
                    arguments, error = parse_tool_arguments("".join(fragments))
                    yield ToolCallReady(ToolCall(call_id, name, arguments, error))
            elif kind == "message_delta":
                delta = need(data, "delta", dict, kind)
                stop = map_stop_reason(get(delta, "stop_reason", str, "delta"))
                usage = get(data, "usage", dict, kind, default={}) or {}
                output_tokens = get(usage, "output_tokens", int, "usage", default=output_tokens) or 0
                input_tokens = get(usage, "input_tokens", int, "usage", default=input_tokens) or 0
        # Anthropic's input_tokens are those after the last breakpoint: the prompt is all three
        counted = Usage(input_tokens + cache_read + cache_write, output_tokens, cache_read, cache_write)
        yield await finished(events, stop, counted, model)


# The events whose data we read; everything else (ping, new types) is skipped unparsed.
_READ = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
    }
)
