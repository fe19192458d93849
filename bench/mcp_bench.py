"""A warm MCP tool call next to a warm skill call; prints one JSON object.
Run: .venv/bin/python bench/mcp_bench.py [-n 200]   (after .ci/setup)

Both go through the path the runtime uses (the tool's handler: host, sandbox, audit record):
- skill: the skills bench's `echo` skill in its warm bubblewrap sandbox (one JSON line each way);
- mcp_node: `echo` of @modelcontextprotocol/server-everything (Node) in the MCP sandbox, through the
  mcp SDK's ClientSession and our capped transport;
- mcp_python: `get_current_time` of mcp-server-time (Python) in the same sandbox.
Target: a warm MCP call's p50 within 2x a warm skill call's p50.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results
from bench.skills_bench import bench_context, install_bench_skill, machine, percentiles
from bot.config import McpSettings, SkillSettings
from bot.mcp_servers.tools import McpTools
from bot.skills.tools import load_skill_tools
from policies.kernel.aio import run as run_loop

TIME_VENV = ROOT / ".mcp-servers" / "time"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def declare(home: Path) -> None:
    """Add and approve the two real servers with `owlia mcp` (started in the sandbox, tools pinned)."""
    from typer.testing import CliRunner

    from bot.cli.mcp_cmd import app

    def run(*argv: str) -> None:
        done = CliRunner().invoke(app, list(argv), env={"OWLIA_HOME": str(home)})
        if done.exit_code != 0:
            raise SystemExit(done.output)

    run(
        "add",
        "everything",
        "--bind",
        str(EVERYTHING.parents[3]),
        "--",
        "/usr/bin/node",
        str(EVERYTHING),
        "stdio",
    )
    run("approve", "everything", "--level", "echo=read", "--others", "skip", "--yes")
    run(
        "add",
        "time",
        "--bind",
        str(TIME_VENV),
        "--",
        str(TIME_VENV / "bin" / "python3"),
        "-m",
        "mcp_server_time",
        "--local-timezone",
        "UTC",
    )
    run("approve", "time", "--level", "get_current_time=read", "--others", "skip", "--yes")


async def timed(handler, ctx, args, rounds: int) -> list[float]:
    samples = []
    await handler(ctx, args)  # cold start, not counted
    for _ in range(rounds):
        started = time.perf_counter()
        await handler(ctx, args)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def measure(home: Path, rounds: int) -> dict:
    ctx = bench_context(home)
    skills = load_skill_tools(home, SkillSettings(), None)
    mcp = McpTools.load(home, McpSettings())
    try:
        echo = next(t for t in skills.tools if t.name == "skill_bench_echo")
        tools = {t.name: t for t in mcp.tools()}
        node, python = tools["mcp_everything_echo"], tools["mcp_time_get_current_time"]
        result = {
            "skill": percentiles(await timed(echo.handler, ctx, echo.args.model_validate({"x": 1}), rounds)),
            "mcp_node": percentiles(
                await timed(node.handler, ctx, node.args.model_validate({"message": "hi"}), rounds)
            ),
            "mcp_python": percentiles(
                await timed(python.handler, ctx, python.args.model_validate({"timezone": "UTC"}), rounds)
            ),
        }
    finally:
        await skills.close()
        await mcp.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=200, help="warm calls per tool")
    results.add_arguments(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        install_bench_skill(home)
        declare(home)
        report = run_loop(measure(home, args.n))
    skill = report["skill"]["p50_ms"]
    report["ratio_p50"] = {k: round(report[k]["p50_ms"] / skill, 2) for k in ("mcp_node", "mcp_python")}
    report["targets"] = {
        "mcp_warm_p50_within_x_skill": 2,
        "met": all(v <= 2 for v in report["ratio_p50"].values()),
    }
    report["machine"] = machine()
    results.emit("mcp", report, args)


if __name__ == "__main__":
    main()
