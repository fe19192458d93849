"""`owlia start` keeps its channels alive and runs once per home.

Before: a Telegram network error at start-up (TelegramNetworkError) ended the channel for good while
the process kept running with no channel, and a second `owlia start` on the same home also ran (it
only failed to bind the control plane), so two bots polled one token and ran every cron job twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from bot.config import load_bot_config
from bot.runtime.channel_state import ChannelStates, Phase, backoff_delay
from bot.runtime.control import runtime_health
from bot.runtime.launcher import Launch, serve
from bot.workspace import create_workspace
from tests.bot.agent.conftest import FAKE_KEYS, Reply, default_bot_section, llm  # noqa: F401 - fixture
from tests.fakes.telegram_server import TOKEN, FakeTelegramServer

ROOT = Path(__file__).resolve().parents[3]


class Outage:
    """A TCP front for the Telegram server that drops every connection until `restore()`."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.up = False
        self.dropped = 0
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    def restore(self) -> None:
        self.up = True

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.up:
            self.dropped += 1
            writer.transport.abort()  # a reset: the client raises NetworkError
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()


def make_home(tmp_path: Path, llm, api_base: str) -> Path:  # noqa: F811 - the fixture's name
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    create_workspace(home / "workspace")
    config = {
        "chains": [{"id": 31337, "name": "anvil", "rpc_url": "http://127.0.0.1:9", "dev": True}],
        "bot": default_bot_section(
            llm,
            gateway={"enabled": False},
            channels={"telegram": {"api_base": api_base, "allow_from": ["42"]}},
        ),
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


@contextlib.asynccontextmanager
async def running(home: Path) -> AsyncIterator[Launch]:
    """`owlia start`'s serve() on this home, in this loop, until the block ends."""
    stop = asyncio.Event()
    launched: list[Launch] = []
    task = asyncio.create_task(serve(home, load_bot_config(home), stop=stop, on_ready=launched.append))
    try:
        while not launched:
            assert not task.done(), task.exception() if task.done() else None
            await asyncio.sleep(0.02)
        yield launched[0]
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def recovers(launch: Launch, outage: Outage, tg: FakeTelegramServer) -> None:
    """Down (and said so by /health) while the network fails; up, polling, once it is back."""
    states = launch.states
    # It failed, then tried again. Counting drops alone is not enough: one attempt sends getMe and
    # deleteWebhook together, so two drops can come before the channel has recorded its failure.
    for _ in range(400):
        if "telegram" in states.states and states.states["telegram"].failures >= 1:
            break
        await asyncio.sleep(0.05)
    state = states.states["telegram"]
    failed_at = outage.dropped
    for _ in range(400):
        if outage.dropped > failed_at:
            break
        await asyncio.sleep(0.05)
    assert outage.dropped > failed_at, "the channel tries again after a failure"
    assert state.phase in (Phase.DOWN, Phase.CONNECTING) and state.failures >= 1
    health = runtime_health(launch.reach, states)
    report = await health()
    assert report["channels"].ok is False and "telegram" in report["channels"].detail
    outage.restore()
    for _ in range(200):
        if state.phase is Phase.UP:
            break
        await asyncio.sleep(0.05)
    assert state.phase is Phase.UP and state.failures == 0
    assert (await health())["channels"].ok
    for _ in range(200):  # the poll goes out just after the channel says it is up
        if tg.calls_of("getUpdates"):
            break
        await asyncio.sleep(0.05)
    assert tg.calls_of("getUpdates"), "the channel polls once it is up"


def test_a_network_error_at_start_up_is_retried_until_the_channel_is_up(tmp_path, llm, monkeypatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    with FakeTelegramServer() as tg:
        port = int(tg.url.rsplit(":", 1)[1])

        async def go() -> None:
            outage = Outage(port)
            home = make_home(tmp_path, llm, await outage.start())
            try:
                async with running(home) as launch:
                    await recovers(launch, outage, tg)
            finally:
                await outage.close()

        asyncio.run(asyncio.wait_for(go(), 90))


def test_one_home_runs_one_bot(tmp_path, llm, monkeypatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    with FakeTelegramServer() as tg:
        home = make_home(tmp_path, llm, tg.url)

        async def go() -> subprocess.CompletedProcess:
            async with running(home):
                env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEYS["anthropic"]}
                second = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "bot.cli",
                    "--home",
                    str(home),
                    "start",
                    cwd=ROOT,
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                out, err = await asyncio.wait_for(second.communicate(), 60)
                return subprocess.CompletedProcess([], second.returncode or 0, out.decode(), err.decode())

        result = asyncio.run(asyncio.wait_for(go(), 90))
    assert result.returncode == 1
    assert f"another bot is already running on {home} (pid {os.getpid()})" in result.stderr
    assert "Traceback" not in result.stderr
    assert len([c for c in tg.calls_of("getMe")]) == 1  # the second never reached Telegram


def test_a_message_waiting_at_start_is_answered_once_the_rest_has_loaded(tmp_path, llm, monkeypatch) -> None:
    """Ready first: the channel polls before the tools, memory and scheduler are built; a message
    already waiting on Telegram is held until they are, then answered, once. `owlia start` runs its
    way to ready without the cyclic garbage collector (bot/cli/start_run.py); it is back on once the
    rest has loaded."""
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEYS["anthropic"])
    llm.enqueue(Reply(text=["pong"]))
    with FakeTelegramServer() as tg:
        tg.message(42, "ping")  # there before the bot starts: the first poll returns it
        home = make_home(tmp_path, llm, tg.url)
        at_ready: list[object] = []

        async def go() -> None:
            stop = asyncio.Event()
            task = asyncio.create_task(
                serve(
                    home,
                    load_bot_config(home),
                    stop=stop,
                    on_ready=lambda launch: at_ready.append((launch.runtime, gc.isenabled())),
                )
            )
            try:
                while not [m for m in tg.chat(42) if m.text == "pong"]:
                    assert not task.done(), task.exception() if task.done() else None
                    await asyncio.sleep(0.02)
                assert gc.isenabled()
            finally:
                stop.set()
                launch = await asyncio.wait_for(task, 30)
            assert at_ready == [(None, False)] and launch.runtime is not None  # built after ready, then used

        gc.disable()  # as `owlia start` does before it loads anything
        try:
            asyncio.run(asyncio.wait_for(go(), 60))
        finally:
            gc.enable()
        assert [m.text for m in tg.chat(42) if m.text == "pong"] == ["pong"]


@pytest.mark.parametrize("failures", range(1, 12))
def test_backoff_grows_and_is_capped(failures: int) -> None:
    delay = backoff_delay(failures)
    assert min(60.0, 2 ** (failures - 1)) <= delay <= 1.2 * min(60.0, 2 ** (failures - 1))


def test_a_channel_that_returns_by_itself_is_run_again() -> None:
    class Flaky:
        runs = 0

        async def run(self, stop: asyncio.Event) -> None:
            Flaky.runs += 1
            if Flaky.runs == 3:
                stop.set()

        async def send_text(self, chat_id: str, text: str) -> None:
            pass

    async def go() -> None:
        states = ChannelStates()
        await asyncio.wait_for(states.keep("flaky", Flaky(), asyncio.Event(), delay=lambda n: 0.01), 5)
        assert Flaky.runs == 3

    asyncio.run(go())
