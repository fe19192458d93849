"""The fake server's non-streaming JSON mode, read by the real SDKs (so the fake itself stays honest)."""

from __future__ import annotations

import asyncio

import anthropic
import openai
import pytest

from tests.fakes.llm_server import Reply, ScriptedToolCall


def test_anthropic_json_reply_parses_in_the_sdk(server):
    server.enqueue(Reply(text=["Hi ", "there"], tool_calls=[ScriptedToolCall("toolu_1", "f", ('{"a"', ": 1}"))]))

    async def call():
        client = anthropic.AsyncAnthropic(api_key="k", base_url=server.url, max_retries=0)
        return await client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])

    message = asyncio.run(call())
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Hi there" and message.content[1].input == {"a": 1}
    assert message.stop_reason == "tool_use" and message.usage.input_tokens == 11


def test_openai_json_reply_parses_in_the_sdk(server):
    server.enqueue(Reply(text=["Hello"], stop="length"))

    async def call():
        client = openai.AsyncOpenAI(api_key="k", base_url=server.openai_url, max_retries=0)
        return await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

    completion = asyncio.run(call())
    assert completion.choices[0].message.content == "Hello"
    assert completion.choices[0].finish_reason == "length" and completion.usage.completion_tokens == 7


def test_unscripted_request_is_an_error_not_a_hang(server):
    async def call():
        client = openai.AsyncOpenAI(api_key="k", base_url=server.openai_url, max_retries=0)
        return await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

    with pytest.raises(openai.InternalServerError, match="no scripted reply"):
        asyncio.run(call())
