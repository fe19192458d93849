"""`owlia mcp` without the agent: the approval screen against a server's hostile text, interactive
levels, the declaration's own checks, and a warm real server left alone while it idles."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from bot.config import McpSettings
from bot.mcp_servers.store import McpStore, ServerDecl
from bot.mcp_servers.tools import McpHost, McpTools
from bot.observability.audit import BotAudit
from tests.mcp.conftest import (  # noqa: F401 - fixture
    add_everything,
    add_hostile,
    add_time,
    audit,
    mcp,
    state_dir,
)

GUTTER_ROW = ("    | ", "      | ", "  | ")


def test_the_approval_screen_keeps_server_text_under_the_gutter(tmp_path, state_dir):
    add_hostile(tmp_path, state_dir)
    (state_dir / "variant").write_text("v3")
    refused = mcp(tmp_path, "approve", "hostile", "--others", "skip", "--level", "fake=read", "--yes", code=1)
    assert (
        "fake cannot be approved: its description holds the invisible or control character U+001B" in refused
    )
    out = mcp(tmp_path, "approve", "hostile", "--others", "skip", "--level", "fake_plain=read", "--yes")
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    rows = out.splitlines()
    fake = [r for r in rows if "mcp_hostile_fake_plain [read]:" in r]
    assert fake and all(
        r.startswith(GUTTER_ROW) for r in fake
    )  # the faked row only ever appears under the gutter
    assert not [r for r in rows if r.lstrip().startswith("signing: no")]
    assert all(len(r) <= 100 for r in rows)
    assert "tool with a name that cannot be offered (never used):" in out
    assert "tool mcp_hostile_fake cannot be approved (never used): its description holds" in " ".join(
        out.split()
    )
    assert set(McpStore(tmp_path).entry("hostile").tools) == {"fake_plain"}


def test_levels_are_asked_per_tool_and_write_is_the_default(tmp_path, state_dir):
    add_hostile(tmp_path, state_dir)
    names = ["huge", "slow", "escape", "sample", "linger", "tunnel", "hog"]
    levels = [arg for n in names for arg in ("--level", f"{n}=skip")]
    out = mcp(tmp_path, "approve", "hostile", *levels, input="read\n\ny\n")  # weather: read; pay: default
    assert "level for weather" in out and "level for pay" in out
    tools = McpStore(tmp_path).entry("hostile").tools
    assert {n: p.level for n, p in tools.items()} == {"weather": "read", "pay": "write"}
    assert mcp(tmp_path, "approve", "hostile", *levels, input="read\nsign\nn\n", code=1)  # said no: unchanged
    assert McpStore(tmp_path).entry("hostile").tools["pay"].level == "write"


def test_declarations_refuse_secrets_relative_commands_and_system_binds(tmp_path):
    assert "never gets secrets" in mcp(
        tmp_path, "add", "x", "--env", "API_TOKEN=abc", "--", "/usr/bin/true", code=1
    )
    assert "absolute path" in mcp(tmp_path, "add", "x", "--", "node", "server.js", code=1)
    mcp(tmp_path, "add", "x", "--bind", "/usr/lib", "--", "/usr/bin/true")
    assert "cannot be bound" in mcp(tmp_path, "approve", "x", "--yes", code=1)
    assert "needs a url and no command" in mcp(
        tmp_path, "add", "y", "--url", "https://a.example/mcp", "--", "/usr/bin/true", code=1
    )


@given(st.text(max_size=3000), st.integers(min_value=1024, max_value=4096))
@hsettings(max_examples=60, deadline=None)
def test_results_never_exceed_the_cap(text, cap):
    host = McpHost(McpSettings(max_result_bytes=cap), BotAudit.__new__(BotAudit), protected=())
    out = host._output("s", "t", text)
    body = out.content.split("\n", 1)[1]
    assert out.untrusted and len(body) <= cap + 60
    assert body.startswith(text[:cap])


def test_a_warm_real_server_idling_is_left_alone(tmp_path):
    add_everything(tmp_path)
    mcp(tmp_path, "approve", "everything", "--level", "get-sum=read", "--others", "skip", "--yes")
    from tests.mcp.test_hostile import Events, _ctx

    async def go() -> None:
        source = McpTools.load(tmp_path, McpSettings())
        tool = next(t for t in source.tools() if t.name == "mcp_everything_get-sum")
        try:
            for _ in range(2):
                out = await tool.handler(_ctx(tmp_path, Events()), tool.args.model_validate({"a": 1, "b": 2}))
                assert "3" in out.content
                await asyncio.sleep(2.5)  # idle time passing is what is tested: the server must outlive it
        finally:
            await source.close()

    asyncio.run(go())
    kinds = [r["kind"] for r in audit(tmp_path)]
    assert kinds.count("mcp.started") == 1 and "mcp.idle_kill" not in kinds


def test_two_servers_whose_tool_names_meet_offer_only_the_first(tmp_path, state_dir):
    from bot.mcp_servers.store import PinnedTool, tool_hash

    store = McpStore(tmp_path)
    schema = {"type": "object"}
    for server, tool in (("a", "b_c"), ("a_b", "c")):
        store.add(ServerDecl(name=server, transport="stdio", command=("/usr/bin/true",)))
        store.approve(
            server,
            {
                tool: PinnedTool(
                    name=tool,
                    level="read",
                    hash=tool_hash(tool, "", schema),
                    description="",
                    input_schema=schema,
                )
            },
        )
    source = McpTools.load(tmp_path, McpSettings())
    assert [t.name for t in source.tools()] == ["mcp_a_b_c"]
    assert "has the name of a tool of a" in source.problems[0]
    assert [r["server"] for r in audit(tmp_path) if r["kind"] == "mcp.refused"] == ["a_b"]


@pytest.mark.parametrize("body", ["{not json", "[]", '{"version": 1, "servers": []}'])
def test_a_broken_registry_refuses_every_server_with_a_clear_error(tmp_path, body):
    home = tmp_path / "home"
    add_time(home)
    (home / "mcp" / "servers.json").write_text(body)
    out = mcp(home, "list", code=1)
    assert "servers.json is corrupt; refusing to load any MCP server" in out
