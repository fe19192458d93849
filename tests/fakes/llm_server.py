"""A scripted local LLM server speaking the real Anthropic and OpenAI wire protocols.

The bot's own LLM client (bot.llm) talks to it over real sockets, so tests exercise its request
encoding, SSE parsing and error mapping against the documented wire formats: Anthropic's named
events (`event:` + `data:`, `ping` keep-alives, an `error` event mid-stream) and OpenAI's bare
`data:` chunks ending in `data: [DONE]`. Tests queue replies (text chunks, tool calls whose JSON
arguments are split into fragments, a stop reason, or an HTTP error) and afterwards inspect every
request the client actually sent (headers + JSON body).

A reply can also use the framing liberties the SSE standard allows and real servers take (CRLF
line ends, `:` comment keep-alives, one event's JSON spread over several `data:` lines, HTTP/1.1
chunked transfer, the body written a few bytes at a time), or be hostile: raw bytes of our choice,
a raw error body, a stream that never ends.

    with FakeLLMServer() as server:
        server.enqueue(Reply(text=["Hel", "lo"], crlf=True, comments=True))
        ... AnthropicProvider(api_key=..., base_url=server.url) / OpenAIProvider(base_url=server.openai_url) ...
        server.requests[0].body["messages"]
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.prompt_cache import AnthropicCache, OpenAICache


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog of 5 refuses connections from 20 concurrent users
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-stream (a cancelled turn, a stopped bot) is the client's business,
        as on a real provider; anything else is printed as socketserver does."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


@dataclass(frozen=True)
class ScriptedToolCall:
    id: str
    name: str
    fragments: tuple[str, ...]  # the JSON arguments, as the stream will deliver them


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `stop` is the provider-native stop/finish reason; by default end_turn /
    stop, or tool_use / tool_calls when there are tool calls. `status` != 200 sends an error body
    instead. `fail_mid_stream` (Anthropic) sends an SSE `error` event after the text chunks."""

    text: tuple[str, ...] | list[str] = ()
    tool_calls: tuple[ScriptedToolCall, ...] | list[ScriptedToolCall] = ()
    stop: str | None = None
    status: int = 200
    error_type: str = "api_error"
    error_message: str = "scripted error"
    usage: tuple[int, int] = (11, 7)
    model: str | None = None
    fail_mid_stream: str | None = None
    truncate: bool = False  # close the connection after the text chunks, without a stop event
    delay: float = 0.0  # seconds before the answer starts (a slow model, for cancellation tests)
    reset: bool = False  # with `truncate`: end with a TCP reset (a dropped connection), not a clean close
    # Framing liberties of the SSE standard that real servers take:
    crlf: bool = False  # CRLF line ends instead of LF
    comments: bool = False  # a `: keep-alive` comment line before every event
    multiline: bool = False  # each event's JSON spread over several `data:` lines
    chunked: bool = False  # HTTP/1.1 chunked transfer encoding (the real APIs' framing)
    write_size: int = 0  # write the body this many bytes at a time (0: one write per event)
    # Hostile answers:
    raw: bytes | None = None  # sent as the whole 200 body instead of the scripted events
    content_type: str = "text/event-stream"
    content_encoding: str | None = None  # a content-encoding header, whatever the body is
    error_body: bytes | None = None  # with `status` != 200: this body instead of the JSON error
    headers: tuple[tuple[str, str], ...] = ()  # extra headers on an `error_body` answer (e.g. Location)
    hang: float = 0.0  # after the body, keep the connection open this long without closing it
    drip: float = 0.0  # while hanging, send a `: keep-alive` comment every `drip` seconds


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class _Script:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    cycle: tuple[Reply, ...] = ()  # served round-robin once the queue is empty (benchmarks)
    served: int = 0
    keep_requests: int = 100_000
    caches: tuple[AnthropicCache, OpenAICache] | None = None  # count tokens as the providers do
    usage_log: list[dict[str, int]] = field(default_factory=list)  # with caches: each request's accounting


def _sse(event: str | None, data: Any, reply: Reply | None = None) -> bytes:
    """One event, framed as `reply` asks (LF, single `data:` line, no comments by default)."""
    reply = reply or Reply()
    if isinstance(data, str):
        payload = [data]
    else:
        payload = json.dumps(data, indent=1).split("\n") if reply.multiline else [json.dumps(data)]
    lines = [": keep-alive"] if reply.comments else []
    lines += [f"event: {event}"] if event else []
    lines += [f"data: {line}" for line in payload]
    eol = "\r\n" if reply.crlf else "\n"
    return (eol.join(lines) + eol + eol).encode()


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeLLM/1.0"
    script: _Script  # set on the subclass made per server

    reply: Reply  # the reply being sent, for its framing

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        with self.script.lock:
            self.script.requests.append(
                RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            reply = self.script.replies.popleft() if self.script.replies else None
            if reply is None and self.script.cycle:
                reply = self.script.cycle[self.script.served % len(self.script.cycle)]
                self.script.served += 1
            if len(self.script.requests) > self.script.keep_requests:
                del self.script.requests[0]
        if reply is not None and reply.delay:
            time.sleep(reply.delay)
        self.reply = reply or Reply()
        if reply is not None and reply.status != 200 and reply.error_body is not None:
            return self._error_raw(reply)
        if reply is not None and reply.raw is not None:
            self._start_sse()
            self._send(reply.raw)
            return self._finish()
        if self.path.rstrip("/").endswith("/messages"):
            self._anthropic(body, reply)
        elif self.path.rstrip("/").endswith("/chat/completions"):
            self._openai(body, reply)
        else:
            self._json(
                404, {"error": {"message": f"no route {self.path}", "type": "not_found", "code": None}}
            )

    # -- plumbing ------------------------------------------------------------------------------

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error_raw(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type if reply.raw is not None else "text/html")
        self.send_header("content-length", str(len(reply.error_body or b"")))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.error_body or b"")

    def _start_sse(self) -> None:
        if self.reply.chunked:
            self.protocol_version = "HTTP/1.1"  # the status line; the connection still closes after
        self.send_response(200)
        self.send_header("content-type", self.reply.content_type)
        self.send_header("cache-control", "no-cache")
        if self.reply.content_encoding:
            self.send_header("content-encoding", self.reply.content_encoding)
        if self.reply.chunked:
            self.send_header("transfer-encoding", "chunked")
        self.end_headers()  # otherwise HTTP/1.0: the body ends when we close the connection

    def _send(self, data: bytes) -> None:
        step = self.reply.write_size or len(data) or 1
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if self.reply.chunked else piece)
            self.wfile.flush()

    def _event(self, event: str | None, data: Any) -> None:
        self._send(_sse(event, data, self.reply))

    def _finish(self) -> None:
        """End the body (the last chunk, if chunked), after hanging on as long as the reply asks."""
        deadline = time.monotonic() + self.reply.hang
        while time.monotonic() < deadline:
            if self.reply.drip:
                time.sleep(self.reply.drip)
                try:
                    self._send(b": keep-alive\n\n")
                except OSError:
                    return  # the client gave up
            else:
                time.sleep(min(0.05, self.reply.hang))
        if self.reply.chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _cut(self, reply: Reply) -> None:
        """The connection ends mid-stream: cleanly, or with a reset as when a proxy or NAT drops it."""
        if reply.reset:  # linger 0 + close before the server's own shutdown(SHUT_WR): RST, no FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()

    # -- Anthropic Messages API ------------------------------------------------------------------

    def _anthropic(self, body: Any, reply: Reply | None) -> None:
        if reply is None:
            reply = Reply(status=500, error_type="api_error", error_message="fake server: no scripted reply")
        if reply.status != 200:
            self._json(
                reply.status,
                {"type": "error", "error": {"type": reply.error_type, "message": reply.error_message}},
            )
            return
        model = reply.model or (body or {}).get("model", "fake-model")
        stop = reply.stop or ("tool_use" if reply.tool_calls else "end_turn")
        in_tokens, out_tokens = reply.usage
        counted: dict[str, int] = {"input_tokens": in_tokens}
        if self.script.caches is not None and isinstance(body, dict):
            counted = self.script.caches[0].usage(body)
            with self.script.lock:
                self.script.usage_log.append(
                    {
                        "prompt": sum(counted.values()),
                        "cached": counted["cache_read_input_tokens"],
                        "written": counted["cache_creation_input_tokens"],
                    }
                )
        if not (body or {}).get("stream"):
            content: list[dict[str, Any]] = []
            if reply.text:
                content.append({"type": "text", "text": "".join(reply.text)})
            for call in reply.tool_calls:
                content.append(
                    {
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": json.loads("".join(call.fragments) or "{}"),
                    }
                )
            self._json(
                200,
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": in_tokens, "output_tokens": out_tokens},
                },
            )
            return
        self._start_sse()
        self._event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**counted, "output_tokens": 1},
                },
            },
        )
        self._event("ping", {"type": "ping"})
        if reply.truncate and not reply.text:
            return self._cut(reply)
        index = 0
        if reply.text:
            self._event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in reply.text:
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            if reply.truncate:
                return self._cut(reply)
            if reply.fail_mid_stream:
                self._event(
                    "error",
                    {
                        "type": "error",
                        "error": {"type": reply.fail_mid_stream, "message": "scripted mid-stream failure"},
                    },
                )
                return self._finish()
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        for call in reply.tool_calls:
            self._event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
                },
            )
            for fragment in call.fragments:
                self._event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment},
                    },
                )
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        self._event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": out_tokens},
            },
        )
        self._event("message_stop", {"type": "message_stop"})
        self._finish()

    # -- OpenAI Chat Completions -----------------------------------------------------------------

    def _openai(self, body: Any, reply: Reply | None) -> None:
        if reply is None:
            reply = Reply(
                status=500, error_type="server_error", error_message="fake server: no scripted reply"
            )
        if reply.status != 200:
            self._json(
                reply.status,
                {
                    "error": {
                        "message": reply.error_message,
                        "type": reply.error_type,
                        "code": reply.error_type,
                    }
                },
            )
            return
        body = body or {}
        model = reply.model or body.get("model", "fake-model")
        finish = reply.stop or ("tool_calls" if reply.tool_calls else "stop")
        in_tokens, out_tokens = reply.usage
        usage: dict[str, Any] = {
            "prompt_tokens": in_tokens,
            "completion_tokens": out_tokens,
            "total_tokens": in_tokens + out_tokens,
        }
        if self.script.caches is not None:
            prompt, cached = self.script.caches[1].usage(body)
            with self.script.lock:
                self.script.usage_log.append({"prompt": prompt, "cached": cached})
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": out_tokens,
                "total_tokens": prompt + out_tokens,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": model,
        }
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text) or None}
            if reply.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": "".join(c.fragments)},
                    }
                    for c in reply.tool_calls
                ]
            self._json(
                200,
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                    "usage": usage,
                },
            )
            return

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            return _sse(
                None,
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
                    ],
                },
                self.reply,
            )

        self._start_sse()
        self._send(chunk({"role": "assistant", "content": ""}))
        for piece in reply.text:
            self._send(chunk({"content": piece}))
        if reply.truncate:
            return self._cut(reply)
        for position, call in enumerate(reply.tool_calls):
            first, *rest = call.fragments or ("",)
            self._send(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": position,
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": first},
                            }
                        ]
                    }
                )
            )
            for fragment in rest:
                self._send(chunk({"tool_calls": [{"index": position, "function": {"arguments": fragment}}]}))
        self._send(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._event(None, {**base, "choices": [], "usage": usage})
        self._event(None, "[DONE]")
        self._finish()


class FakeLLMServer:
    """The server on 127.0.0.1 with a random port, in a daemon thread."""

    def __init__(self, *, count_tokens: bool = False) -> None:
        """`count_tokens`: usage is the prompt's own size, with the providers' prompt-cache accounting
        (tests/fakes/prompt_cache.py) instead of each reply's scripted `usage`."""
        self._script = _Script(caches=(AnthropicCache(), OpenAICache()) if count_tokens else None)
        handler = type("ScriptedHandler", (_Handler,), {"script": self._script})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL for the Anthropic SDK (it appends /v1/messages)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        """Base URL for the OpenAI SDK (it appends /chat/completions)."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._script.lock:
            return list(self._script.requests)

    @property
    def usage_log(self) -> list[dict[str, int]]:
        """With `count_tokens`: per request, the prompt's tokens, those read from the cache and written."""
        with self._script.lock:
            return list(self._script.usage_log)

    @property
    def pending(self) -> int:
        with self._script.lock:
            return len(self._script.replies)

    def enqueue(self, *replies: Reply) -> None:
        with self._script.lock:
            self._script.replies.extend(replies)

    def repeat(self, *replies: Reply, keep_requests: int = 100) -> None:
        """Answer with these replies round-robin, forever, once the queue is empty (benchmarks)."""
        with self._script.lock:
            self._script.cycle, self._script.served = tuple(replies), 0
            self._script.keep_requests = keep_requests

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(mode: str) -> None:
    """`python -m tests.fakes.llm_server text|tool`: a fake in its own process, so a benchmark's
    measurements do not share a GIL with it. Prints the base URL, then serves until killed."""
    import time

    server = FakeLLMServer().start()
    if mode == "tool":
        server.repeat(
            Reply(tool_calls=[ScriptedToolCall("toolu_bench", "list_notes", ("{}",))]), Reply(text=["Done."])
        )
    else:
        server.repeat(Reply(text=["Hi ", "there."]))
    print(server.url, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    import sys

    serve_forever(sys.argv[1] if len(sys.argv) > 1 else "text")
