"""Channel benchmark; prints one JSON object. Run: .venv/bin/python bench/channel_bench.py [-n 300]

What the Telegram channel adds on top of the runtime, with an instant fake LLM (its own process,
the bot's Anthropic client over loopback) and the local Telegram Bot API server (tests/fakes):

- console: inbound -> reply through BotCore with the console sink, timed around `core.handle`;
- telegram latency: from the update being queued on the Bot API server to the server receiving
  the final text of the reply (long poll wake-up, update parsing, routing and admission, the
  core, the reply message), by the server's clock. Console and Telegram messages alternate on one
  runtime, so a loaded machine slows both alike; `paired_*` are percentiles of the per-pair
  differences;
- telegram throughput: `users` allowed users each send a message at once, repeatedly; messages/s
  until every final reply has arrived.
Added latency = telegram - console at the same percentile. The fake Bot API server runs in a thread
of this process, so its own request handling (and the GIL it shares) is counted against the
channel: the figures are an upper bound.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agent_bench import KEY, FakeInProcess, write_home

from bench import results
from bot.channels.access import open_access
from bot.channels.base import Inbound
from bot.channels.console import ConsoleSink, LineReader
from bot.channels.telegram import TelegramChannel
from bot.config import TelegramSettings, load_bot_config
from bot.runtime.assemble import build_runtime
from bot.runtime.llm_pool import Secret
from policies.kernel.aio import (
    loop_name,
    run as run_loop,
)
from tests.fakes.telegram_server import FakeTelegramServer

WARMUP = 20
FINAL = "Hi there."  # what the fake LLM in "text" mode answers, streamed as "Hi " + "there."


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3)

    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


def runtime_for(home: Path):
    async def lookup(name: str) -> Secret | None:
        return Secret("api_key", KEY) if name == "anthropic" else None

    return build_runtime(home, load_bot_config(home), lookup=lookup)


def final_replies(tg: FakeTelegramServer, since: int) -> dict[int, float]:
    """chat id -> when the server received the final text, for calls after index `since`."""
    done: dict[int, float] = {}
    for call in tg.calls[since:]:
        if (
            call.method in ("sendMessage", "editMessageText")
            and call.status == 200
            and call.params.get("text") == FINAL
        ):
            done[int(call.params["chat_id"])] = call.at
    return done


async def wait_for(tg: FakeTelegramServer, since: int, chats: int, timeout: float = 30.0) -> dict[int, float]:
    deadline = time.monotonic() + timeout
    while True:
        done = final_replies(tg, since)
        if len(done) >= chats:
            return done
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(done)} of {chats} replies arrived")
        await asyncio.sleep(0.002)  # detection only: latency is taken from the server's own clock


async def measure(home: Path, n: int, users: int, rounds: int) -> dict:
    """Console and Telegram messages alternate on one runtime, so both see the same machine load."""
    base = 10_000
    console_ms: list[float] = []
    telegram_ms: list[float] = []
    with FakeTelegramServer() as tg:
        runtime = runtime_for(home)
        assert runtime.core is not None
        access = open_access(home, runtime.config.bot.pairing)
        settings = TelegramSettings(api_base=tg.url, allow_from=tuple(str(base + u) for u in range(users)))
        channel = TelegramChannel(runtime.core, settings, tg.token, access, poll_timeout=10)
        stop = asyncio.Event()
        task = asyncio.create_task(channel.run(stop))
        await asyncio.wait_for(channel.ready.wait(), 10)
        sink = ConsoleSink(io.StringIO(), LineReader(io.StringIO(""), asyncio.get_running_loop()))
        try:
            for i in range(n + WARMUP):
                inbound = Inbound(
                    "console", "bench", uuid.uuid4().hex, f"message {i}", received_at=time.time()
                )
                start = time.perf_counter()
                await runtime.core.handle(inbound, sink)
                console = (time.perf_counter() - start) * 1000
                since = len(tg.calls)
                start = time.monotonic()
                tg.message(base, f"message {i}")
                done = await wait_for(tg, since, 1)
                if i >= WARMUP:
                    console_ms.append(console)
                    telegram_ms.append((done[base] - start) * 1000)
            handled = 0
            started = time.monotonic()
            for r in range(rounds):
                since = len(tg.calls)
                for u in range(users):
                    tg.message(base + u, f"burst {r}")
                await wait_for(tg, since, users)
                handled += users
            elapsed = time.monotonic() - started
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
            await runtime.close()
            access.close()
    c, t = summary(console_ms), summary(telegram_ms)
    paired = summary([tm - cm for tm, cm in zip(telegram_ms, console_ms, strict=True)])
    return {
        "console": c,
        "telegram": t,
        "telegram_added_ms": {
            "p50": round(t["p50_ms"] - c["p50_ms"], 3),
            "p95": round(t["p95_ms"] - c["p95_ms"], 3),
            "paired_p50": paired["p50_ms"],
            "paired_p95": paired["p95_ms"],
        },
        "telegram_throughput": {
            "users": users,
            "messages": handled,
            "seconds": round(elapsed, 3),
            "messages_per_s": round(handled / elapsed, 1),
        },
        "target": "added p50 <= 10 ms",
    }


async def main(n: int, users: int, rounds: int) -> dict:
    with FakeInProcess("text") as fake, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        write_home(home, fake.url)
        return await measure(home, n, users, rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=300, help="messages per latency run")
    parser.add_argument(
        "--users",
        type=int,
        default=4,
        help="concurrent users in the throughput run (the fake LLM's listen backlog is 5)",
    )
    parser.add_argument("--rounds", type=int, default=15, help="bursts in the throughput run")
    results.add_arguments(parser)
    args = parser.parse_args()
    report = run_loop(main(args.n, args.users, args.rounds))  # on the bot's loop, as `owlia start` runs it
    results.emit("channel", {**report, "event_loop": loop_name()}, args)
