"""The OpenAI adapter (our own client on httpx) against the scripted fake server, over real sockets."""

from __future__ import annotations

import pytest

from bot.llm.errors import ProviderError
from bot.llm.openai_provider import OpenAIProvider
from bot.llm.providers import make_profile
from bot.llm.types import (
    Finished,
    Message,
    Request,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallReady,
    ToolResult,
    ToolSpec,
    Usage,
)
from tests.bot.llm.conftest import collect
from tests.fakes.llm_server import Reply, ScriptedToolCall

KEY = "sk-proj-SECRETSECRETSECRET0123456789"
SWAP = ToolSpec(
    "quote_swap",
    "Quote a token swap",
    {"type": "object", "properties": {"sell": {"type": "string"}, "amount": {"type": "number"}}},
)


def request(*messages: Message, tools=(), system="") -> Request:
    return Request(
        messages=messages or (Message.user("hi"),),
        model="gpt-test",
        system=system,
        tools=tuple(tools),
        max_tokens=256,
    )


def test_text_streams_as_several_deltas_then_usage(server):
    server.enqueue(Reply(text=["Gas ", "is ", "low."], usage=(30, 4)))
    events = collect(OpenAIProvider(api_key=KEY, base_url=server.openai_url).stream(request(system="sys")))
    assert events == [
        TextDelta("Gas "),
        TextDelta("is "),
        TextDelta("low."),
        Finished(StopReason.END, Usage(30, 4), "gpt-test"),
    ]
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["max_completion_tokens"] == 256
    assert sent.body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def test_tool_call_arguments_split_over_deltas_are_assembled(server):
    server.enqueue(
        Reply(
            tool_calls=[
                ScriptedToolCall("call_a", "quote_swap", ('{"se', 'll": "ETH",', ' "amount": 1.5}')),
                ScriptedToolCall("call_b", "quote_swap", ('{"sell": "USDC"}',)),
            ]
        )
    )
    events = collect(OpenAIProvider(api_key=KEY, base_url=server.openai_url).stream(request(tools=[SWAP])))
    assert events[:2] == [
        ToolCallReady(ToolCall("call_a", "quote_swap", {"sell": "ETH", "amount": 1.5})),
        ToolCallReady(ToolCall("call_b", "quote_swap", {"sell": "USDC"})),
    ]
    assert events[2].stop_reason is StopReason.TOOL_USE
    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "quote_swap",
                "description": "Quote a token swap",
                "parameters": SWAP.parameters,
            },
        }
    ]


def test_invalid_tool_json_becomes_an_error_marker(server):
    server.enqueue(
        Reply(tool_calls=[ScriptedToolCall("call_a", "quote_swap", ('{"sell": "ETH"', ", amount"))])
    )
    events = collect(OpenAIProvider(api_key=KEY, base_url=server.openai_url).stream(request(tools=[SWAP])))
    call = events[0].call
    assert call.arguments == {} and call.error and "not valid JSON" in call.error


def test_tool_round_trip_maps_results_to_tool_role_messages(server):
    server.enqueue(Reply(text=["1 ETH buys 3000 USDC."]))
    history = (
        Message.user("quote 1 ETH"),
        Message.assistant(ToolCall("call_a", "quote_swap", {"sell": "ETH", "amount": 1})),
        Message.user(ToolResult("call_a", "3000 USDC", untrusted=False), "and in DAI?"),
    )
    events = collect(OpenAIProvider(api_key=KEY, base_url=server.openai_url).stream(request(*history)))
    assert events[-1].stop_reason is StopReason.END
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": "quote 1 ETH"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "quote_swap", "arguments": '{"sell": "ETH", "amount": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "3000 USDC"},
        {"role": "user", "content": "and in DAI?"},
    ]


def test_error_tool_results_are_marked(server):
    server.enqueue(Reply(text=["sorry"]))
    history = (
        Message.user("q"),
        Message.assistant(ToolCall("c", "quote_swap", {})),
        Message.user(ToolResult("c", "no route", is_error=True, untrusted=False)),
    )
    collect(OpenAIProvider(api_key=KEY, base_url=server.openai_url).stream(request(*history)))
    assert server.requests[0].body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "c",
        "content": "ERROR: no route",
    }


@pytest.mark.parametrize(
    ("native", "ours"),
    [
        ("stop", StopReason.END),
        ("tool_calls", StopReason.TOOL_USE),
        ("length", StopReason.MAX_TOKENS),
        ("content_filter", StopReason.REFUSAL),
    ],
)
def test_finish_reason_mapping(server, native, ours):
    server.enqueue(Reply(text=["x"], stop=native))
    events = collect(OpenAIProvider(api_key=KEY, base_url=server.openai_url).stream(request()))
    assert events[-1].stop_reason is ours


def test_401_is_fatal_and_never_leaks_the_key(server):
    # OpenAI echoes (part of) a rejected key in its message; we must not pass it on.
    server.enqueue(
        Reply(status=401, error_type="invalid_api_key", error_message=f"Incorrect API key provided: {KEY}.")
    )
    provider = OpenAIProvider(api_key=KEY, base_url=server.openai_url)
    with pytest.raises(ProviderError) as info:
        collect(provider.stream(request()))
    exc = info.value
    assert exc.status == 401 and not exc.retryable
    for text in (str(exc), repr(exc), repr(provider)):
        assert KEY not in text and "SECRET" not in text


@pytest.mark.parametrize(
    ("status", "retryable"), [(429, True), (500, True), (503, True), (400, False), (403, False), (404, False)]
)
def test_http_errors_are_classified(server, status, retryable):
    server.enqueue(Reply(status=status, error_type="x"))
    with pytest.raises(ProviderError) as info:
        collect(OpenAIProvider(api_key=KEY, base_url=server.openai_url).stream(request()))
    assert (info.value.status, info.value.retryable) == (status, retryable)
    assert len(server.requests) == 1


def test_openai_compatible_endpoint_by_base_url(server):
    server.enqueue(Reply(text=["local ", "llama"], model="llama-3.1-8b"))
    profile = make_profile(
        "local", "openai-compatible/llama-3.1-8b", api_key="none", base_url=server.openai_url
    )
    events = collect(
        profile.provider.stream(Request((Message.user("hi"),), model=profile.model, max_tokens=64))
    )
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["local ", "llama"]
    assert events[-1].model == "llama-3.1-8b"
    body = server.requests[0].body
    # compatible servers get the widely supported `max_tokens`, not OpenAI's newer field
    assert (
        body["model"] == "llama-3.1-8b" and body["max_tokens"] == 64 and "max_completion_tokens" not in body
    )


def test_openai_compatible_without_base_url_is_refused():
    with pytest.raises(ValueError, match="needs a base_url"):
        make_profile("local", "openai-compatible/x", api_key="k")


def test_cached_prompt_tokens_are_read_and_the_turn_note_comes_last():
    from bot.llm.openai_provider import OpenAIProvider
    from bot.llm.types import Message, Request
    from tests.bot.llm.conftest import collect
    from tests.fakes.llm_server import FakeLLMServer, Reply

    system = "rules " * 2000
    with FakeLLMServer(count_tokens=True) as counting:
        counting.enqueue(Reply(text=["a"]), Reply(text=["b"]))
        turns = [
            Request(
                messages=(Message.user("hi"),),
                model="gpt",
                system=system,
                max_tokens=64,
                note="(current time: 2026-12-06 05:13 UTC)",
            ),
            Request(
                messages=(Message.user("hi"), Message.assistant("a"), Message.user("more")),
                model="gpt",
                system=system,
                max_tokens=64,
                note="(current time: 2026-12-06 05:14 UTC)",
            ),
        ]
        usage = [
            collect(OpenAIProvider(api_key="sk-proj-" + "o" * 40, base_url=counting.openai_url).stream(t))[
                -1
            ].usage
            for t in turns
        ]
        last = counting.requests[1].body["messages"][-1]
    assert usage[0].cache_read_tokens == 0
    assert usage[1].cache_read_tokens >= 1024 and usage[1].cache_read_tokens % 128 == 0  # as OpenAI counts
    assert usage[1].cache_read_tokens / usage[1].input_tokens > 0.9
    assert last == {"role": "user", "content": "(current time: 2026-12-06 05:14 UTC)"}
