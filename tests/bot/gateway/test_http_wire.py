"""The gateway's HTTP/1.1 server on the wire (raw sockets): what a hostile or broken client sends
is refused or dropped, never parsed loosely, and never holds the server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

import bot.gateway.server as server_mod
from bot.gateway import create_app, start_in_background
from bot.observability.events import EventBus
from bot.observability.metrics import default_metrics
from tests.bot.gateway.harness import TOKEN, all_ok


async def _exchange(port: int, raw: bytes, timeout: float = 5.0) -> bytes:
    """Send `raw`, read until the server closes the connection (or `timeout`)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        chunks = []
        while chunk := await asyncio.wait_for(reader.read(65536), timeout):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        writer.close()


def _on_gateway(scenario: Callable[[int], Awaitable[None]]) -> None:
    async def main() -> None:
        app = create_app(events=EventBus(), metrics=default_metrics(), health=all_ok, token=TOKEN)
        gw = await start_in_background(app, "127.0.0.1", 0, token=TOKEN)
        try:
            await scenario(gw.port)
        finally:
            await gw.stop(timeout=1.0)

    asyncio.run(main())


def _get(path: str, *extra: str, close: bool = True) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *extra]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_two_requests_on_one_kept_alive_connection_and_head_has_no_body() -> None:
    async def scenario(port: int) -> None:
        raw = (
            _get("/livez", close=False)
            + b"HEAD /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        answer = await _exchange(port, raw)
        first, _, second = answer.partition(b'{"status":"alive"}')
        assert first.startswith(b"HTTP/1.1 200 ") and b"cache-control: no-store" in first.lower()
        assert second.startswith(b"HTTP/1.1 200 ") and second.endswith(b"\r\n\r\n")  # head only
        assert b"server:" not in answer.lower()

    _on_gateway(scenario)


@pytest.mark.parametrize(
    "raw,status",
    [
        # a length and a chunked body at once: the classic smuggling pair
        (
            b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"400",
        ),
        (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n", b"400"),
        (_get("/metrics", f"Authorization: Bearer {TOKEN}", "Authorization: Bearer x"), b"400"),
        (b"GET /health HTTP/1.1\r\n\r\n", b"400"),  # no Host at all
        (
            b"POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            b"405",
        ),
        (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 70000\r\n\r\n" + b"x" * 70000, b"413"),
        (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n", b"431"),
        (b"GARBAGE\r\n\r\n", b"400"),
    ],
)
def test_malformed_or_hostile_requests_are_refused(raw: bytes, status: bytes) -> None:
    async def scenario(port: int) -> None:
        answer = await _exchange(port, raw)
        assert answer.split(b" ", 2)[1] == status, answer[:200]
        assert b"components" not in answer

    _on_gateway(scenario)


def test_a_stalled_request_is_dropped(monkeypatch) -> None:
    monkeypatch.setattr(server_mod, "HEAD_TIMEOUT", 0.3)

    async def scenario(port: int) -> None:
        answer = await _exchange(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", timeout=5)
        assert answer == b""  # closed without an answer, well before the read timeout

    _on_gateway(scenario)


def test_a_request_trickled_a_byte_at_a_time_is_dropped_at_the_deadline(monkeypatch) -> None:
    """The deadline covers the whole request: each byte arriving in time does not extend it."""
    monkeypatch.setattr(server_mod, "HEAD_TIMEOUT", 0.5)

    async def scenario(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            for byte in b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.05)
                if reader.at_eof():
                    break
            answer = await asyncio.wait_for(reader.read(), 5)
        except ConnectionError:
            answer = b""
        finally:
            writer.close()
        assert answer == b""  # dropped without an answer
        assert loop.time() - started < 3.0  # at the deadline, long before the trickle would end

    _on_gateway(scenario)


def test_connections_beyond_the_cap_get_503(monkeypatch) -> None:
    monkeypatch.setattr(server_mod, "MAX_CONNECTIONS", 2)

    async def scenario(port: int) -> None:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await asyncio.sleep(0.1)
        answer = await _exchange(port, _get("/health"))
        assert answer.startswith(b"HTTP/1.1 503 ")
        for _, writer in held:
            writer.close()
        await asyncio.sleep(0.1)
        assert (await _exchange(port, _get("/health"))).startswith(b"HTTP/1.1 200 ")

    _on_gateway(scenario)


def test_a_failing_route_is_a_500_and_the_server_keeps_serving() -> None:
    async def broken() -> dict[str, object]:
        raise RuntimeError("a bug")

    async def main() -> None:
        app = create_app(events=EventBus(), metrics=default_metrics(), health=all_ok, token=TOKEN)
        app.routes["/livez"] = (False, lambda query: broken())  # type: ignore[assignment,arg-type,return-value]
        gw = await start_in_background(app, "127.0.0.1", 0, token=TOKEN)
        try:
            answer = await _exchange(gw.port, _get("/livez"))
            assert answer.startswith(b"HTTP/1.1 500 ") and b"a bug" not in answer
            assert (await _exchange(gw.port, _get("/health"))).startswith(b"HTTP/1.1 200 ")
        finally:
            await gw.stop(timeout=1.0)

    asyncio.run(main())


def test_a_refused_head_request_gets_its_status_without_a_body() -> None:
    async def scenario(port: int) -> None:
        answer = await _exchange(
            port, b"HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        assert answer.startswith(b"HTTP/1.1 401 ") and answer.endswith(b"\r\n\r\n")

    _on_gateway(scenario)
