"""Skill sandbox benchmarks; prints one JSON object. Run: .venv/bin/python bench/skills_bench.py [-n 30]

- cold: a tool call to a skill with no running process: stage the verified files, start bubblewrap
  (namespaces, seccomp, rlimits), start python with the SDK, load the skill, `initialize`, then the
  call and its answer (target p50 <= 150 ms);
- warm: the same call to the already running sandbox, one JSON line each way (target p50 <= 5 ms);
- warm_callback: a warm call whose tool makes one `core.chain`-style round trip back to the host
  (refused here, so no network is measured), i.e. the cost of a callback.
Every call goes through the same SkillTools/SkillHost path the runtime uses, audit log included.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results
from bot.config import SkillSettings
from bot.skills.tools import load_skill_tools
from bot.tools.base import ContextKind, ToolContext
from bot.tools.services import Services
from policies.kernel.aio import (
    loop_name,
    run as run_loop,
)
from skills_runtime.store import SkillStore

SKILL_MD = """---
name: bench
version: 1.0.0
description: echo for benchmarks
entrypoint: main.py
tools:
  - {name: echo, level: read, description: echo, input_schema: {type: object, properties: {x: {type: integer}}}}
  - {name: ask, level: read, description: one callback}
---
"""
MAIN = """from owlia_skill import HostError, chain, tool

@tool("echo")
def echo(args):
    return {"x": args.get("x", 0)}

@tool("ask")
def ask(args):
    try:
        chain("eth_blockNumber")
    except HostError as exc:
        return str(exc)
"""


def install_bench_skill(home: Path) -> None:
    """Install this bench's `bench` skill (echo, and one refused callback) into `home`, approved, the
    way `owlia skill install --yes` does; the MCP bench calls it too."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "bench"
        source.mkdir()
        (source / "SKILL.md").write_text(SKILL_MD)
        (source / "main.py").write_text(MAIN)
        store = SkillStore(home)
        store.install(store.prepare(source))


def bench_context(home: Path) -> ToolContext:
    """The tool context the benches call tools in: a DM of the console channel."""
    return ToolContext("bench", "console", "bench", ContextKind.DM, Services(workspace=home), run_id="bench")


def percentiles(samples: list[float]) -> dict[str, float]:
    """The latency block of the skills, MCP and agent benches' reports (milliseconds in, ms out)."""
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


def machine() -> dict[str, object]:
    """The machine block of this bench's report and the MCP bench's (the same figures side by side)."""
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "event_loop": loop_name(),
    }  # the bot's (policies.kernel.aio), as `owlia start` runs them


async def measure(home: Path, rounds: int) -> dict:
    loaded = load_skill_tools(home, SkillSettings(), None)
    if not loaded.tools:
        raise SystemExit(f"no sandbox: {loaded.problems}")
    tools = {t.name: t for t in loaded.tools}
    echo, ask = tools["skill_bench_echo"], tools["skill_bench_ask"]
    ctx = bench_context(home)
    host = loaded.host
    cold, warm, callback = [], [], []
    try:
        for i in range(rounds):
            slot = host._slots.get("bench")
            if slot is not None and slot.process is not None:
                await slot.process.kill()  # the next call starts a fresh sandbox
            started = time.perf_counter()
            await echo.handler(ctx, echo.args.model_validate({"x": i}))
            cold.append((time.perf_counter() - started) * 1000)
            for j in range(20):
                started = time.perf_counter()
                await echo.handler(ctx, echo.args.model_validate({"x": j}))
                warm.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await ask.handler(ctx, ask.args.model_validate({}))
            callback.append((time.perf_counter() - started) * 1000)
    finally:
        await loaded.close()
    return {
        "backend": host.backend.name,
        "cold": percentiles(cold),
        "warm": percentiles(warm),
        "warm_callback": percentiles(callback),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=30, help="cold starts (each followed by 20 warm calls)")
    results.add_arguments(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        install_bench_skill(home)
        report = run_loop(measure(home, args.n))
    report["targets"] = {
        "cold_p50_ms": 150,
        "warm_p50_ms": 5,
        "met": report["cold"]["p50_ms"] <= 150 and report["warm"]["p50_ms"] <= 5,
    }
    report["machine"] = machine()
    results.emit("skills", report, args)


if __name__ == "__main__":
    main()
