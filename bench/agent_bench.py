"""Bot benchmarks; prints one JSON object. Run: .venv/bin/python bench/agent_bench.py [--dists]

- overhead per message: inbound message -> reply through BotCore, the agent loop, the real
  anthropic SDK and a local instant fake LLM (text only, and with one read-tool round); the fake
  answers at once, so the time is the bot's own (plus the SDK and loopback HTTP it needs);
- memory search over 10 000 notes (SQLite FTS5);
- footprint of a real `owlia chat` process: cold start to the prompt, idle RSS, RSS after 1 000
  messages, `owlia --help` wall time, and (with --dists) installed distributions in a clean venv.
Peers (nanobot-ai, OpenClaw) are measured by bench/peers/measure_peers.py; this script folds in
bench/peers/results.json when it exists, as ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.channels.base import Inbound  # noqa: E402
from bot.channels.console import ConsoleSink, LineReader  # noqa: E402
from bot.config import load_bot_config  # noqa: E402
from bot.memory import bench_search  # noqa: E402
from bot.runtime.assemble import build_runtime  # noqa: E402
from bot.runtime.llm_pool import Secret  # noqa: E402

KEY = "sk-ant-api03-" + "b" * 40


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 3),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
            "mean_ms": round(statistics.fmean(ordered), 3)}


class FakeInProcess:
    """The fake LLM server in its own process (`python -m tests.fakes.llm_server MODE`)."""

    def __init__(self, mode: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.llm_server", mode], cwd=ROOT,
                                     stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()

    def __enter__(self) -> FakeInProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def write_home(home: Path, url: str) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    config = {"bot": {"llm": {"profiles": [{"name": "main", "model": "anthropic/claude-bench",
                                            "base_url": url}]},
                      "gateway": {"enabled": False}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


async def overhead(home: Path, n: int) -> dict[str, float]:
    async def lookup(name: str) -> Secret | None:
        return Secret("api_key", KEY) if name == "anthropic" else None

    runtime = build_runtime(home, load_bot_config(home), lookup=lookup)
    sink = ConsoleSink(io.StringIO(), LineReader(io.StringIO(""), asyncio.get_running_loop()))
    samples: list[float] = []
    try:
        for i in range(n + 20):
            inbound = Inbound("console", "bench", uuid.uuid4().hex, f"message {i}", received_at=time.time())
            start = time.perf_counter()
            await runtime.core.handle(inbound, sink)
            if i >= 20:  # the first messages warm the SDK and connection pool
                samples.append((time.perf_counter() - start) * 1000)
    finally:
        await runtime.close()
    return percentiles(samples)


def rss_kb(pid: int) -> int:
    total = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            total += int(line.split()[1])
    return total


def chat_process(home: Path, messages: int) -> dict[str, float]:
    """Spawn `owlia chat`, time it to the first prompt, then drive `messages` messages through it."""
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen([str(ROOT / ".venv/bin/owlia"), "--home", str(home), "chat"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0)
    buffer = b""
    while b"you> " not in buffer:
        chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            raise RuntimeError("owlia chat exited before its prompt")
        buffer += chunk
    ready_s = time.perf_counter() - start
    time.sleep(5)
    idle = rss_kb(proc.pid)
    prompts = 0
    for i in range(messages):
        proc.stdin.write(f"message {i}\n".encode())
        while True:
            chunk = os.read(proc.stdout.fileno(), 65536)
            prompts += chunk.count(b"you> ")
            if prompts >= i + 1 or not chunk:
                break
    after = rss_kb(proc.pid)
    proc.stdin.write(b"/quit\n")
    proc.stdin.close()
    proc.wait(timeout=30)
    return {"cold_start_to_ready_s": round(ready_s, 3), "idle_rss_mb": round(idle / 1024, 1),
            f"rss_after_{messages}_messages_mb": round(after / 1024, 1)}


def help_time(runs: int = 10) -> dict[str, float]:
    samples = []
    for i in range(runs + 1):
        start = time.perf_counter()
        subprocess.run([str(ROOT / ".venv/bin/owlia"), "--help"], capture_output=True, check=True)
        if i:
            samples.append(time.perf_counter() - start)
    return {"median_s": round(statistics.median(samples), 3), "max_s": round(max(samples), 3)}


def distributions() -> dict[str, int]:
    """Distributions a user installs for the bot: `pip install .[bot]` into a fresh venv."""
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin/pip"), "install", "-q", f"{ROOT}[bot]"], check=True)
        listed = json.loads(subprocess.run([str(venv / "bin/pip"), "list", "--format=json"], check=True,
                                           capture_output=True, text=True).stdout)
    names = {p["name"].lower() for p in listed}
    return {"total": len(names), "excluding_pip_setuptools_wheel": len(names - {"pip", "setuptools", "wheel"})}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--footprint-messages", type=int, default=1000)
    parser.add_argument("--dists", action="store_true", help="also count distributions in a clean venv (~1 min)")
    args = parser.parse_args()
    result: dict[str, object] = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        with FakeInProcess("text") as fake:
            write_home(Path(tmp) / "a", fake.url)
            result["overhead_text_reply"] = asyncio.run(overhead(Path(tmp) / "a", args.messages))
            write_home(Path(tmp) / "b", fake.url)
            result["footprint"] = chat_process(Path(tmp) / "b", args.footprint_messages)
        with FakeInProcess("tool") as fake:
            write_home(Path(tmp) / "c", fake.url)
            result["overhead_one_tool_round"] = asyncio.run(overhead(Path(tmp) / "c", args.messages))
    result["memory_search_10k"] = {k: round(v, 3) for k, v in bench_search(10_000).items()}
    result["owlia_help"] = help_time()
    if args.dists:
        result["distributions"] = distributions()
    peers = ROOT / "bench/peers/results.json"
    if peers.exists():
        result["peers"] = json.loads(peers.read_text())
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
