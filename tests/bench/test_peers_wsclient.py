"""The peers bench's WebSocket client (bench/peers/wsclient.py) against a real server library: it
must keep a connection alive while the benchmark is busy elsewhere and reads nothing, as nanobot's
server requires (it pings and closes a connection whose pong does not come within its timeout)."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "peers"))
from wsclient import WSClient  # noqa: E402

PING_EVERY = 0.2  # the server's ping interval and pong timeout, seconds


@pytest.fixture
def echo_server() -> Iterator[int]:
    """A `websockets` server on a port of its own that echoes text and pings every 0.2 s."""
    ready: list[int] = []
    stop = threading.Event()

    async def echo(connection: websockets.ServerConnection) -> None:
        async for message in connection:
            await connection.send(message)

    async def serve() -> None:
        async with websockets.serve(
            echo, "127.0.0.1", 0, ping_interval=PING_EVERY, ping_timeout=PING_EVERY
        ) as server:
            ready.append(server.sockets[0].getsockname()[1])
            while not stop.is_set():
                await asyncio.sleep(0.02)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not ready:
        assert time.monotonic() < deadline, "the websocket server did not start"
        time.sleep(0.01)
    yield ready[0]
    stop.set()
    thread.join(timeout=10)


def test_a_connection_nobody_reads_for_many_ping_timeouts_stays_open(echo_server: int) -> None:
    client = WSClient("127.0.0.1", echo_server, "/", timeout=5)
    try:
        client.send_text("first")
        assert client.recv_text() == "first"
        time.sleep(10 * PING_EVERY)  # the benchmark is busy with the other services: nobody reads
        client.send_text("after a long turn elsewhere")
        assert client.recv_text() == "after a long turn elsewhere"
    finally:
        client.close()


def test_a_closed_connection_raises_on_every_later_read(echo_server: int) -> None:
    client = WSClient("127.0.0.1", echo_server, "/", timeout=5)
    client.close()
    for _ in range(2):
        with pytest.raises(ConnectionError):
            client.recv_text()
