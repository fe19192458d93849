"""The fake server itself stays honest: its non-streaming JSON answers and its errors have the
documented shapes of each API, read here with a plain HTTP client (no vendor SDK)."""

from __future__ import annotations

import httpx

from tests.fakes.llm_server import Reply, ScriptedToolCall


def test_anthropic_json_reply_has_the_messages_api_shape(server):
    server.enqueue(
        Reply(text=["Hi ", "there"], tool_calls=[ScriptedToolCall("toolu_1", "f", ('{"a"', ": 1}"))])
    )
    answer = httpx.post(
        f"{server.url}/v1/messages",
        json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]},
    )
    message = answer.json()
    assert answer.status_code == 200 and message["type"] == "message" and message["role"] == "assistant"
    assert message["content"] == [
        {"type": "text", "text": "Hi there"},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
    ]
    assert message["stop_reason"] == "tool_use" and message["usage"] == {
        "input_tokens": 11,
        "output_tokens": 7,
    }


def test_openai_json_reply_has_the_chat_completions_shape(server):
    server.enqueue(Reply(text=["Hello"], stop="length"))
    answer = httpx.post(
        f"{server.openai_url}/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    completion = answer.json()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"] == {"role": "assistant", "content": "Hello"}
    assert (
        completion["choices"][0]["finish_reason"] == "length"
        and completion["usage"]["completion_tokens"] == 7
    )


def test_unscripted_request_is_an_error_not_a_hang(server):
    answer = httpx.post(f"{server.openai_url}/chat/completions", json={"model": "m", "messages": []})
    assert answer.status_code == 500 and "no scripted reply" in answer.json()["error"]["message"]


def test_streams_end_as_each_api_ends_them(server):
    server.enqueue(Reply(text=["a"]), Reply(text=["b"]))
    anthropic = httpx.post(f"{server.url}/v1/messages", json={"model": "m", "stream": True}).text
    openai = httpx.post(f"{server.openai_url}/chat/completions", json={"model": "m", "stream": True}).text
    assert anthropic.startswith("event: message_start\ndata: {") and "event: ping\n" in anthropic
    assert anthropic.endswith('event: message_stop\ndata: {"type": "message_stop"}\n\n')
    assert openai.startswith("data: {") and "event:" not in openai and openai.endswith("data: [DONE]\n\n")


def test_framing_liberties_are_what_the_standard_allows(server):
    server.enqueue(Reply(text=["a"], crlf=True, comments=True, multiline=True, chunked=True))
    answer = httpx.post(f"{server.url}/v1/messages", json={"model": "m", "stream": True})
    assert answer.headers["transfer-encoding"] == "chunked"
    text = answer.text
    assert (
        "\n" not in text.replace("\r\n", "") and ": keep-alive\r\nevent: message_start\r\ndata: {\r\n" in text
    )
