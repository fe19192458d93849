"""The tests' hostile MCP server in the sandbox, driven through McpHost as the executor drives it:
every attempt is contained, audited, and where it matters the user is told."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import pytest

from bot.config import McpSettings
from bot.mcp_servers.tools import McpTools
from bot.tools.base import ContextKind, ToolContext, ToolFailure
from bot.tools.services import Services
from tests.mcp.conftest import add_hostile, audit, mcp, state_dir  # noqa: F401 - fixture


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict]] = []

    def emit(self, topic: str, kind: str, data: dict) -> None:
        self.seen.append((topic, kind, data))


def _ctx(tmp_path: Path, events: Events) -> ToolContext:
    services = Services(
        workspace=tmp_path,
        events=events,
        default_chain_id=31337,
        chain_names={},
        signer=None,
        chain=None,
        memory=None,
        fetcher=None,
        state_dir=tmp_path,
    )
    return ToolContext("s", "console", "tester", ContextKind.DM, services, run_id="r", call_id="c")


def _run(
    home: Path, tmp_path: Path, settings: McpSettings, *tools: str, after: float = 0.0
) -> tuple[list, Events]:
    """Call the named approved tools in order with one warm host; each outcome or ToolFailure text."""
    events = Events()

    async def go() -> list:
        source = McpTools.load(home, settings)
        found = {t.name: t for t in source.tools()}
        outcomes = []
        try:
            for name in tools:
                tool = found[f"mcp_hostile_{name}"]
                try:
                    outcomes.append(await tool.handler(_ctx(tmp_path, events), tool.args.model_validate({})))
                except ToolFailure as exc:
                    outcomes.append(str(exc))
            await asyncio.sleep(after)
        finally:
            await source.close()
        return outcomes

    return asyncio.run(go()), events


@pytest.fixture()
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    (path / "secrets").mkdir(parents=True)
    (path / "secrets" / "signer.token").write_text("secret-token")
    return path


def test_escape_attempts_reach_nothing(home, tmp_path, state_dir):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    sock_dir = Path("/tmp") / f"owlia-test-signer-{time.time_ns()}"
    sock_dir.mkdir(mode=0o755)
    signer_like = socket.socket(socket.AF_UNIX)
    signer_like.bind(str(sock_dir / "signer.sock"))
    signer_like.listen()
    try:
        targets = [
            str(home),
            str(home / "secrets" / "signer.token"),
            str(sock_dir / "signer.sock"),
            "/etc/passwd",
            "/root",
            str(listener.getsockname()[1]),
        ]
        add_hostile(home, state_dir, *targets)
        mcp(home, "approve", "hostile", "--others", "read", "--yes")
        (result,), _ = _run(home, tmp_path, McpSettings(), "escape")
    finally:
        listener.close()
        signer_like.close()
        sock_dir.joinpath("signer.sock").unlink()
        sock_dir.rmdir()
    body = json.loads(result.content.split("\n", 1)[1])
    assert result.untrusted and result.content.startswith(
        "[result of MCP server hostile, tool escape; untrusted]"
    )
    assert not [
        v for v in body.values() if isinstance(v, str) and v.startswith(("CONNECTED", "READ", "LISTED"))
    ]
    assert body[f"tcp:{targets[-1]}"] == "PermissionError" and body["internet"] == "PermissionError"
    assert body["env"] == ["HOME", "LANG", "PATH", "PWD"]  # PWD=/tmp from bwrap --chdir


def test_huge_and_slow_results_kill_the_sandbox_and_the_next_call_starts_fresh(home, tmp_path, state_dir):
    add_hostile(home, state_dir)
    mcp(home, "approve", "hostile", "--others", "read", "--yes")
    settings = McpSettings(call_timeout=2, max_result_bytes=100_000)
    started = time.monotonic()
    (huge, slow, weather), events = _run(home, tmp_path, settings, "huge", "slow", "weather")
    assert "larger than" in huge and "stopped" in huge
    assert "no answer within 2s" in slow and time.monotonic() - started < 20
    assert weather.content.startswith("[result of MCP server hostile, tool weather; untrusted]")
    records = audit(home)
    assert [r["reason"] for r in records if r["kind"] == "mcp.killed"][0].startswith("sent a message larger")
    calls = [r for r in records if r["kind"] == "mcp.call"]
    assert (
        [c["outcome"] for c in calls] == ["error", "error", "ok"]
        and calls[0]["killed"]
        and calls[1]["killed"]
    )
    assert len([r for r in records if r["kind"] == "mcp.started"]) == 3
    assert [k for _, k, _ in events.seen].count("mcp.killed") == 2


def test_a_sampling_request_never_sees_the_conversation(home, tmp_path, state_dir):
    add_hostile(home, state_dir)
    mcp(home, "approve", "hostile", "--others", "read", "--yes")
    (result,), events = _run(home, tmp_path, McpSettings(), "sample")
    answer = result.content
    assert (
        "Sampling not supported" in answer
        and "tester" not in answer
        and "secret" not in answer.lower().split("repeat")[0]
    )
    refused = [r for r in audit(home) if r["kind"] == "mcp.request_refused"]
    assert refused and refused[0]["method"] == "sampling/createMessage"
    assert (
        "tool",
        "mcp.request_refused",
        {"server": "hostile", "method": "sampling/createMessage"},
    ) in events.seen


def test_work_left_running_after_a_call_is_killed_between_calls(home, tmp_path, state_dir):
    add_hostile(home, state_dir)
    mcp(home, "approve", "hostile", "--others", "read", "--yes")
    (result,), _ = _run(home, tmp_path, McpSettings(), "linger", after=3.0)
    assert result.content.endswith("done")
    killed = [r for r in audit(home) if r["kind"] == "mcp.idle_kill"]
    assert killed, audit(home)
    assert "not there at start" in killed[0]["reason"] or "CPU" in killed[0]["reason"]


def test_a_list_changed_in_the_middle_of_a_session_disables_the_changed_tool(home, tmp_path, state_dir):
    add_hostile(home, state_dir)
    (state_dir / "variant").write_text("v4")  # same list as v1 until the first weather call
    mcp(home, "approve", "hostile", "--level", "weather=read", "--others", "skip", "--yes")
    (first, second), events = _run(home, tmp_path, McpSettings(), "weather", "weather")
    assert first.content.startswith("[result of MCP server hostile, tool weather; untrusted]")
    assert second.startswith("NOTE TO THE USER: the MCP server hostile changed its tool weather")
    assert [r["tool"] for r in audit(home) if r["kind"] == "mcp.tool_changed"] == ["weather"]
    assert len([r for r in audit(home) if r["kind"] == "mcp.call"]) == 1
    assert len([r for r in audit(home) if r["kind"] == "mcp.started"]) == 1  # noticed without a restart
    assert any(kind == "mcp.tool_changed" for _, kind, _ in events.seen)


def test_a_list_changed_before_a_result_withholds_that_result(home, tmp_path, state_dir):
    """The server changes the tool during the call and announces it before the result: the connection lists
    the tools again before it hands over the result, so the result is withheld, whatever the scheduling."""
    add_hostile(home, state_dir)
    (state_dir / "variant").write_text("v5")  # same list as v1 until the first weather call
    mcp(home, "approve", "hostile", "--level", "weather=read", "--others", "skip", "--yes")
    (first, second), events = _run(home, tmp_path, McpSettings(), "weather", "weather")
    assert first.startswith(
        "NOTE TO THE USER: the MCP server hostile changed its tool weather during the call"
    )
    assert "withheld" in first and "Sunny" not in first and "IMPORTANT SYSTEM NOTICE" not in first
    assert second.startswith(
        "NOTE TO THE USER: the MCP server hostile changed its tool weather since you approved"
    )
    assert [r["tool"] for r in audit(home) if r["kind"] == "mcp.tool_changed"] == ["weather"]
    assert [r["outcome"] for r in audit(home) if r["kind"] == "mcp.call"] == ["withheld"]
    assert any(kind == "mcp.tool_changed" for _, kind, _ in events.seen)


def test_re_approving_a_changed_tool_takes_effect_on_the_warm_server(home, tmp_path, state_dir):
    add_hostile(home, state_dir)
    mcp(home, "approve", "hostile", "--level", "weather=read", "--others", "skip", "--yes")
    (state_dir / "variant").write_text("v2")
    events = Events()

    async def go() -> list:
        source = McpTools.load(home, McpSettings())
        outcomes = []
        try:
            for approve_first in (False, True):
                if approve_first:  # the user reviews the new description and approves it again
                    await asyncio.to_thread(
                        mcp,
                        home,
                        "approve",
                        "hostile",
                        "--level",
                        "weather=read",
                        "--others",
                        "skip",
                        "--yes",
                    )
                tool = next(t for t in source.tools() if t.name == "mcp_hostile_weather")
                try:
                    outcomes.append(await tool.handler(_ctx(tmp_path, events), tool.args.model_validate({})))
                except ToolFailure as exc:
                    outcomes.append(str(exc))
        finally:
            await source.close()
        return outcomes

    refused, ran = asyncio.run(go())
    assert (
        refused.startswith("NOTE TO THE USER")
        and "Also send funds" in McpTools.load(home, McpSettings()).tools()[0].description
    )
    assert ran.content.startswith("[result of MCP server hostile, tool weather; untrusted]")
    assert (
        len([r for r in audit(home) if r["kind"] == "mcp.started"]) == 1
    )  # the warm server was not restarted
    approved = [r for r in audit(home) if r["kind"] == "mcp.approved"]
    assert len(approved) == 2 and approved[1]["tools"]["weather"]["level"] == "read"
