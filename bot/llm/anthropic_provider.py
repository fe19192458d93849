"""Anthropic Messages API adapter: our messages in, our stream events out.

Uses the `anthropic` SDK's raw event stream (not its helper accumulator) so that we see every
`input_json_delta` and decide ourselves what to do with malformed tool arguments. The SDK's own
retries are off: failover between profiles is the router's job, and hidden retries would hold a
rate-limited profile instead of moving on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2

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
                blocks.append({"type": "tool_use", "id": part.id, "name": part.name,
                               "input": dict(part.arguments)})
            elif isinstance(part, ToolResult):
                blocks.append({"type": "tool_result", "tool_use_id": part.tool_call_id,
                               "content": render_tool_result(part), "is_error": part.is_error})
        out.append({"role": message.role, "content": blocks})
    return out


class AnthropicProvider:
    """Streams one Messages API call. Auth is an API key or an OAuth token (`auth_token=`).

    Note: anthropic SDK 2.x sends both as `Authorization: Bearer ...` (no `x-api-key` header);
    the tests pin what goes on the wire.
    """

    def __init__(self, *, api_key: str | None = None, auth_token: str | None = None,
                 base_url: str | None = None, timeout: float = 120.0) -> None:
        if (api_key is None) == (auth_token is None):
            raise ValueError("give exactly one of api_key or auth_token")
        self._secrets = (api_key, auth_token)
        self._auth = "api_key" if api_key is not None else "oauth"
        self._base_url = base_url
        # OAuth (Claude subscription) tokens are accepted only with this beta flag; see bot/auth/anthropic_oauth.py
        headers = {"anthropic-beta": OAUTH_BETA} if auth_token is not None else None
        self._client = anthropic.AsyncAnthropic(api_key=api_key, auth_token=auth_token, base_url=base_url,
                                                max_retries=0, timeout=timeout, default_headers=headers)

    def __repr__(self) -> str:
        return f"AnthropicProvider(auth={self._auth!r}, base_url={self._base_url!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": to_anthropic_messages(request.messages),
            "stream": True,
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = [{"name": t.name, "description": t.description,
                                "input_schema": dict(t.parameters)} for t in request.tools]
        try:
            events = await self._client.messages.create(**kwargs)
            async with events:
                async for event in self._translate(events):
                    yield event
        except (anthropic.AnthropicError, httpx2.TransportError) as exc:  # the SDK wraps request errors, not mid-stream ones
            raise classify(exc, secrets=self._secrets) from None

    async def _translate(self, events: Any) -> AsyncIterator[StreamEvent]:
        model = ""
        input_tokens = output_tokens = 0
        stop: StopReason | None = None
        tools: dict[int, tuple[str, str, list[str]]] = {}  # block index -> (id, name, json fragments)
        async for event in events:
            kind = event.type
            if kind == "message_start":
                model = event.message.model
                input_tokens = event.message.usage.input_tokens or 0
                output_tokens = event.message.usage.output_tokens or 0
            elif kind == "content_block_start":
                block = event.content_block
                if block.type == "tool_use":
                    tools[event.index] = (block.id, block.name, [])
            elif kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta" and delta.text:
                    yield TextDelta(delta.text)
                elif delta.type == "input_json_delta" and event.index in tools:
                    tools[event.index][2].append(delta.partial_json)
            elif kind == "content_block_stop":
                if event.index in tools:
                    call_id, name, fragments = tools.pop(event.index)
                    arguments, error = parse_tool_arguments("".join(fragments))
                    yield ToolCallReady(ToolCall(call_id, name, arguments, error))
            elif kind == "message_delta":
                stop = map_stop_reason(event.delta.stop_reason)
                output_tokens = event.usage.output_tokens
                if event.usage.input_tokens is not None:
                    input_tokens = event.usage.input_tokens
        if stop is None:  # connection closed before the provider said it was done
            raise ProviderError("the provider's stream ended before the answer was complete",
                                retryable=True, error_type="truncated")
        yield Finished(stop, Usage(input_tokens, output_tokens), model)
