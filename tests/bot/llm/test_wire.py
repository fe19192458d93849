"""Both adapters over real sockets: framing liberties give the same answer, the wire carries what the
APIs document, and a hostile or broken provider gets a clear ProviderError, never a hang, a crash,
unbounded memory or a leaked key."""

from __future__ import annotations

import asyncio
import logging
import time
import traceback

import pytest

from bot.llm.anthropic_provider import AnthropicProvider
from bot.llm.errors import ProviderError
from bot.llm.openai_provider import OpenAIProvider
from bot.llm.sse import SSELimits
from bot.llm.transport import StreamLimits
from bot.llm.types import Finished, Message, Request, StopReason, TextDelta, ToolCallReady
from tests.bot.llm.conftest import collect
from tests.fakes.llm_server import Reply, ScriptedToolCall

ANTHROPIC_KEY = "sk-ant-api03-WIREKEYWIREKEYWIREKEY-0123456789"
OPENAI_KEY = "sk-proj-WIREKEYWIREKEYWIREKEY0123456789"
KEYS = (ANTHROPIC_KEY, OPENAI_KEY)
REQUEST = Request((Message.user("hi"),), model="m", max_tokens=64)


def make(kind: str, server, **kwargs):
    if kind == "anthropic":
        return AnthropicProvider(api_key=ANTHROPIC_KEY, base_url=server.url, **kwargs)
    return OpenAIProvider(api_key=OPENAI_KEY, base_url=server.openai_url, **kwargs)


def failure(provider, request: Request = REQUEST) -> tuple[ProviderError, list]:
    seen: list = []

    async def run() -> None:
        try:
            async for event in provider.stream(request):
                seen.append(event)
        finally:
            await provider.aclose()

    with pytest.raises(ProviderError) as info:
        asyncio.run(run())
    exc = info.value
    text = "".join(traceback.format_exception(exc)) + repr(exc)
    for key in KEYS:
        assert key not in text and "WIREKEY" not in text
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)  # no httpx request
    return exc, seen


BOTH = pytest.mark.parametrize("kind", ["anthropic", "openai"])
QUIRKS = [
    dict(crlf=True),
    dict(comments=True),
    dict(multiline=True),
    dict(chunked=True),
    dict(write_size=1),
    dict(crlf=True, comments=True, multiline=True, chunked=True, write_size=7),
]


@BOTH
@pytest.mark.parametrize("quirks", QUIRKS, ids=lambda q: "+".join(q))
def test_framing_liberties_give_the_same_answer(server, kind, quirks):
    calls = [ScriptedToolCall("call_1", "swap", ('{"sell"', ': "ETH"}'))]
    server.enqueue(
        Reply(text=["Hel", "lo ✓ 🦉"], tool_calls=calls),
        Reply(text=["Hel", "lo ✓ 🦉"], tool_calls=calls, **quirks),
    )
    plain = collect(make(kind, server).stream(REQUEST))
    assert collect(make(kind, server).stream(REQUEST)) == plain
    assert [e.text for e in plain if isinstance(e, TextDelta)] == ["Hel", "lo ✓ 🦉"]
    assert [e.call.arguments for e in plain if isinstance(e, ToolCallReady)] == [{"sell": "ETH"}]
    assert (
        plain[-1] == Finished(StopReason.TOOL_USE, plain[-1].usage, "m")
        and plain[-1].usage.input_tokens == 11
    )


@BOTH
def test_what_goes_on_the_wire(server, kind):
    server.enqueue(Reply(text=["x"]))
    collect(make(kind, server).stream(REQUEST))
    sent = server.requests[0]
    assert sent.method == "POST" and sent.headers["content-type"] == "application/json"
    assert sent.headers["accept"] == "text/event-stream" and sent.headers["accept-encoding"] == "identity"
    assert sent.headers["user-agent"].startswith("owliabot/")
    assert not any(h.startswith("x-stainless") for h in sent.headers)
    if kind == "anthropic":
        assert sent.path == "/v1/messages" and sent.headers["x-api-key"] == ANTHROPIC_KEY
        assert sent.headers["anthropic-version"] == "2023-06-01" and "anthropic-beta" not in sent.headers
        assert sent.body == {
            "model": "m",
            "max_tokens": 64,
            "stream": True,  # the conversation: a cached prefix
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
                }
            ],
        }
    else:
        assert sent.path == "/v1/chat/completions" and sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
        assert sent.body == {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }


def test_one_client_per_provider_reuses_its_connection(server):
    """HTTP/1.1 keep-alive would reuse it; the fake closes after each answer, so two calls, two
    connections, one client: and aclose() closes it."""
    provider = make("openai", server)
    server.enqueue(Reply(text=["a"]), Reply(text=["b"]))

    async def twice() -> list:
        first = [e async for e in provider.stream(REQUEST)]
        second = [e async for e in provider.stream(REQUEST)]
        await provider.aclose()
        return first + second

    events = asyncio.run(twice())
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["a", "b"]
    assert provider._client.is_closed


@BOTH
def test_a_line_over_the_default_limit_is_refused(server, kind):
    server.enqueue(Reply(raw=b"data: " + b"x" * (1 << 20) + b"\n\n"))
    exc, _ = failure(make(kind, server))
    assert exc.retryable and exc.error_type == "protocol" and "longer than 1048576 bytes" in exc.message


@BOTH
def test_an_answer_over_the_total_limit_is_refused(server, kind):
    server.enqueue(Reply(text=["word "] * 400))
    exc, seen = failure(make(kind, server, limits=StreamLimits(sse=SSELimits(max_total=20_000))))
    assert exc.error_type == "protocol" and "larger than 20000 bytes" in exc.message
    assert len(seen) < 400 and not any(isinstance(e, Finished) for e in seen)


@BOTH
@pytest.mark.parametrize("data", [b"not json", b"[1, 2]", b'{"a": NaN}', b"{" * 5000])
def test_data_that_is_not_a_json_object_is_refused(server, kind, data):
    event = b"event: message_start\n" if kind == "anthropic" else b""
    server.enqueue(Reply(raw=event + b"data: " + data + b"\n\n"))
    exc, _ = failure(make(kind, server))
    assert exc.error_type == "protocol" and exc.retryable


@pytest.mark.parametrize(
    "event",
    [
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": "0", "delta": {}}',
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": 5}',
        b'event: content_block_delta\ndata: {"index": 0, "delta": {"type": "text_delta", "text": ["x"]}}',
        b'event: content_block_start\ndata: {"index": 0, "content_block": {"type": "tool_use", "name": "f"}}',
        b'event: message_delta\ndata: {"delta": {"stop_reason": 7}}',
        b'event: message_start\ndata: {"message": {"model": "m", "usage": {"input_tokens": true}}}',
    ],
)
def test_anthropic_events_of_the_wrong_shape_are_refused(server, event):
    server.enqueue(Reply(raw=event + b"\n\n"))
    exc, _ = failure(make("anthropic", server))
    assert exc.error_type == "protocol" and "malformed answer" in exc.message


@pytest.mark.parametrize(
    "chunk",
    [
        b'{"choices": {"delta": {}}}',
        b'{"choices": [5]}',
        b'{"choices": [{"delta": {"content": 5}}]}',
        b'{"choices": [{"delta": {"tool_calls": [{"index": "a"}]}}]}',
        b'{"usage": {"prompt_tokens": "9"}}',
    ],
)
def test_openai_chunks_of_the_wrong_shape_are_refused(server, chunk):
    server.enqueue(Reply(raw=b"data: " + chunk + b"\n\n"))
    exc, _ = failure(make("openai", server))
    assert exc.error_type == "protocol" and "malformed answer" in exc.message


def test_unknown_anthropic_events_and_deltas_are_ignored(server):
    server.enqueue(
        Reply(
            raw=b"".join(
                [
                    b'event: message_start\ndata: {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}}\n\n',
                    b"event: some_future_event\ndata: this is not even JSON\n\n",
                    b"event: ping\ndata: {}\n\n",
                    b'event: content_block_start\ndata: {"index": 0, "content_block": {"type": "thinking", "thinking": ""}}\n\n',
                    b'event: content_block_delta\ndata: {"index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}}\n\n',
                    b'event: content_block_stop\ndata: {"index": 0}\n\n',
                    b'event: content_block_delta\ndata: {"index": 1, "delta": {"type": "text_delta", "text": "ok"}}\n\n',
                    b'event: message_delta\ndata: {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}\n\n',
                    b'event: message_stop\ndata: {"type": "message_stop"}\n\n',
                ]
            )
        )
    )
    events = collect(make("anthropic", server).stream(REQUEST))
    assert events == [TextDelta("ok"), Finished(StopReason.END, events[-1].usage, "m")]
    assert (events[-1].usage.input_tokens, events[-1].usage.output_tokens) == (3, 2)


def test_openai_compatible_quirks_named_events_and_missing_tool_index(server):
    """Some compatible servers leave out the tool-call index; named events are not Chat Completions."""
    server.enqueue(
        Reply(
            raw=b"".join(
                [
                    b"event: progress\ndata: not json\n\n",
                    b'data: {"model": "m", "choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}}]}\n\n',
                    b'data: {"model": "m", "choices": [{"delta": {"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{\\"x\\""}}]}}]}\n\n',
                    b'data: {"model": "m", "choices": [{"delta": {"tool_calls": [{"function": {"arguments": ": 1}"}}]}}]}\n\n',
                    b'data: {"model": "m", "choices": [{"delta": {}, "finish_reason": "tool_calls"}]}\n\n',
                    b"data: [DONE]\n\n",
                ]
            )
        )
    )
    events = collect(make("openai", server).stream(REQUEST))
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("a", "f", {}), ("b", "g", {"x": 1})]


def test_deeply_nested_tool_arguments_are_an_error_marker_not_a_crash(server):
    server.enqueue(Reply(tool_calls=[ScriptedToolCall("t", "f", ("[" * 50_000,))]))
    events = collect(make("anthropic", server).stream(REQUEST))
    assert events[0].call.arguments == {} and "nested deeper" in events[0].call.error


@BOTH
@pytest.mark.parametrize("status", [401, 500])
def test_an_error_body_echoing_the_key_never_reaches_the_message(server, kind, status):
    key = ANTHROPIC_KEY if kind == "anthropic" else OPENAI_KEY
    server.enqueue(
        Reply(
            status=status,
            error_type="authentication_error",
            error_message=f"bad key {key} (key {key[:12]}...)",
        )
    )
    exc, _ = failure(make(kind, server))
    assert exc.status == status and exc.retryable is (status == 500)
    assert "[redacted]" in exc.message


@BOTH
def test_an_error_page_that_is_not_json_or_is_huge(server, kind):
    server.enqueue(
        Reply(status=502, error_body=b"<html>bad gateway " + ANTHROPIC_KEY.encode() + b"</html>"),
        Reply(status=400, error_body=b'{"error": {"message": "' + b"x" * (1 << 20) + b'"}}'),
    )
    exc, _ = failure(make(kind, server))
    assert (exc.status, exc.retryable, exc.message) == (502, True, "provider server error (502)")
    exc, _ = failure(make(kind, server))
    assert (exc.status, exc.retryable) == (400, False) and len(exc.message) < 200


@BOTH
def test_redirects_are_not_followed(server, kind):
    server.enqueue(Reply(status=307, error_body=b"", headers=(("location", f"{server.url}/elsewhere"),)))
    exc, _ = failure(make(kind, server))
    assert exc.status == 307 and not exc.retryable
    assert len(server.requests) == 1  # the key was not replayed to the Location


@BOTH
def test_an_answer_that_is_not_an_event_stream_is_a_clear_error(server, kind):
    server.enqueue(Reply(raw=b"<html>a login page</html>", content_type="text/html"))
    exc, _ = failure(make(kind, server))
    assert (
        not exc.retryable and "'text/html', not an event stream" in exc.message and "base_url" in exc.message
    )


@BOTH
def test_a_compressed_stream_is_refused(server, kind):
    server.enqueue(Reply(text=["x"], content_encoding="gzip"))
    exc, _ = failure(make(kind, server))
    assert exc.error_type == "protocol" and "compressed" in exc.message


@BOTH
def test_a_silent_stream_times_out(server, kind):
    server.enqueue(Reply(raw=b": hello\n\n", hang=5.0))
    started = time.monotonic()
    exc, _ = failure(make(kind, server, timeout=0.4))
    assert exc.retryable and exc.error_type == "timeout" and time.monotonic() - started < 3


@BOTH
def test_a_stream_of_keep_alives_that_never_ends_hits_the_answer_deadline(server, kind):
    server.enqueue(Reply(raw=b": hello\n\n", hang=10.0, drip=0.05))
    started = time.monotonic()
    exc, _ = failure(make(kind, server, timeout=5.0, limits=StreamLimits(max_seconds=0.5)))
    assert exc.retryable and exc.error_type == "timeout" and "longer than 0.5 s" in exc.message
    assert time.monotonic() - started < 4


@BOTH
def test_a_chunked_stream_cut_mid_answer_is_a_dropped_connection(server, kind):
    server.enqueue(Reply(text=["par", "tial"], truncate=True, chunked=True))
    exc, seen = failure(make(kind, server))
    assert exc.retryable and exc.error_type == "connection"
    assert [e.text for e in seen] == ["par", "tial"]


@BOTH
def test_a_stream_closed_without_its_end_is_truncated(server, kind):
    server.enqueue(Reply(text=["par"], truncate=True))
    exc, seen = failure(make(kind, server))
    assert exc.retryable and exc.error_type == "truncated" and seen == [TextDelta("par")]
    assert exc.message == "the provider's stream ended before the answer was complete"


def test_an_openai_error_chunk_mid_stream_is_raised_after_the_text(server):
    server.enqueue(
        Reply(
            raw=b'data: {"choices": [{"delta": {"content": "par"}}]}\n\n'
            b'data: {"error": {"message": "upstream died, key '
            + OPENAI_KEY.encode()
            + b'", "code": 502}}\n\n'
        )
    )
    exc, seen = failure(make("openai", server))
    assert seen == [TextDelta("par")] and exc.retryable and exc.status == 500


@BOTH
def test_connection_errors_carry_no_request(kind):
    provider = (
        AnthropicProvider(api_key=ANTHROPIC_KEY, base_url="http://127.0.0.1:9")
        if kind == "anthropic"
        else OpenAIProvider(api_key=OPENAI_KEY, base_url="http://127.0.0.1:9/v1")
    )
    exc, _ = failure(provider)
    assert (
        exc.retryable
        and exc.error_type == "connection"
        and exc.message == "could not connect to the provider"
    )


@BOTH
def test_debug_logging_of_the_http_stack_never_shows_the_key(server, kind, caplog):
    server.enqueue(Reply(text=["x"]), Reply(status=401, error_message="nope"))
    with caplog.at_level(logging.DEBUG):
        collect(make(kind, server).stream(REQUEST))
        failure(make(kind, server))
    assert caplog.records  # httpx / httpcore did log at DEBUG
    for record in caplog.records:
        for key in KEYS:
            assert key not in record.getMessage()


@BOTH
@pytest.mark.parametrize("stop_at", ["finished", "first_text"])
def test_a_consumer_that_stops_reading_leaves_no_error_at_shutdown(server, kind, stop_at, tmp_path):
    """The router's `complete` returns at Finished without closing its stream, and a cancelled turn
    abandons one mid-answer: the event loop then closes the nested generators itself, all at once."""
    from bot.llm.failover import FailoverRouter, Profile

    server.enqueue(Reply(text=["a", "b"]))
    problems: list[dict] = []
    router = FailoverRouter([Profile("p", make(kind, server), "m")], tmp_path / "cooldowns.json")
    kept = []  # still referenced when asyncio.run ends: the loop's shutdown closes it and all under it

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context))
        kept.append(router.stream(REQUEST))
        async for event in kept[0]:
            if stop_at == "first_text" or isinstance(event, Finished):
                return

    asyncio.run(run())
    assert [p["message"] for p in problems] == []
