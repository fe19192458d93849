"""One memory ceiling for a whole MCP server: the hostile server starts three processes, each inside
its own rlimit, together over the ceiling. It is stopped with the reason, and the bot keeps working:
another server's tool answers at once, and the hostile server's other tools after a fresh start.
Both ways of holding the ceiling run for real: the memory cgroup this machine offers, and the polled
fallback for a machine without one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from bot.config import McpSettings
from bot.mcp_servers.tools import McpTools
from bot.tools.base import ToolFailure
from skills_runtime.memcg import open_ceiling
from tests.mcp.conftest import add_hostile, add_time, audit, mcp, state_dir  # noqa: F401 - fixture
from tests.mcp.test_hostile import Events, _ctx

CEILING_MB = 200


def _calls(home: Path, tmp_path: Path, *, cgroup: bool) -> list:
    settings = McpSettings(memory_ceiling_mb=CEILING_MB, call_timeout=60)

    async def go() -> list:
        source = McpTools.load(home, settings)
        source.host.sandbox.use_cgroup = cgroup
        tools = {t.name: t for t in source.tools()}
        outcomes: list = []
        try:
            for name, args in (
                ("mcp_time_get_current_time", {"timezone": "UTC"}),
                ("mcp_hostile_hog", {}),
                ("mcp_time_get_current_time", {"timezone": "UTC"}),
                ("mcp_hostile_weather", {}),
            ):
                started = time.monotonic()
                try:
                    out = await tools[name].handler(
                        _ctx(tmp_path, Events()), tools[name].args.model_validate(args)
                    )
                    outcomes.append((out.content, time.monotonic() - started))
                except ToolFailure as exc:
                    outcomes.append((str(exc), time.monotonic() - started))
        finally:
            await source.close()
        return outcomes

    return asyncio.run(go())


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "polled"])
def test_a_server_over_its_ceiling_is_stopped_and_the_bot_keeps_working(tmp_path, state_dir, cgroup):
    home = tmp_path / "home"
    add_time(home)
    mcp(home, "approve", "time", "--others", "read", "--yes")
    add_hostile(home, state_dir)
    out = mcp(
        home,
        "approve",
        "hostile",
        "--level",
        "hog=read",
        "--level",
        "weather=read",
        "--others",
        "skip",
        "--yes",
    )
    assert "memory: at most 1024 MiB for the server and everything it starts, together" in " ".join(
        out.split()
    )
    before, hog, after, weather = _calls(home, tmp_path, cgroup=cgroup)
    assert before[0].startswith("[result of MCP server time")
    assert "memory ceiling of 200 MiB" in hog[0] and "stopped" in hog[0], hog
    assert hog[1] < 30  # stopped at once, not by the 60 s call deadline
    assert after[0].startswith("[result of MCP server time")
    assert weather[0].startswith("[result of MCP server hostile, tool weather; untrusted]")
    records = audit(home)
    killed = [r for r in records if r["kind"] == "mcp.killed" and r["server"] == "hostile"]
    assert killed and "200 MiB" in killed[0]["reason"]
    held = [r["memory"] for r in records if r["kind"] == "mcp.started" and r["server"] == "hostile"]
    assert len(held) == 2  # restarted after the kill
    if cgroup:
        assert all(h.startswith("cgroup v") for h in held), held
    else:
        assert all("polled" in h for h in held), held
    leftovers = (
        [p for p in Path("/sys/fs/cgroup").rglob(f"owlia-mcp-{__import__('os').getpid()}-*")]
        if cgroup
        else []
    )
    assert not leftovers  # every cgroup made for a sandbox is removed with it


@given(st.integers(min_value=32, max_value=4096))
@hsettings(max_examples=15, deadline=None)
def test_a_cgroup_holds_exactly_the_ceiling_it_was_given(mb):
    ceiling, how = open_ceiling("mcptest", mb << 20)
    assert ceiling is not None, (
        how
    )  # this machine offers a memory cgroup; the polled fallback is tested above
    try:
        name = "memory.max" if ceiling.version == 2 else "memory.limit_in_bytes"
        assert int((ceiling.path / name).read_text()) == mb << 20
        assert ceiling.oom_kills() == 0
    finally:
        assert ceiling.remove()
