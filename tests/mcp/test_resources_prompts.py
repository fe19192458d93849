"""Resources and prompts, pinned and approved like tools: a resource is read by the model only through
one read-level tool, only at an approved URI, fenced as the server's untrusted text and cut; a prompt
is printed for the user by `owlia mcp prompt` and is never offered to the model. A changed resource or
prompt is refused until approved again; text that cannot be shown whole cannot be approved."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings as hsettings, strategies as st
from pydantic import ValidationError

from bot.config import McpSettings
from bot.mcp_servers.store import McpStore
from bot.mcp_servers.tools import McpTools, cut_resource
from bot.tools.base import ToolFailure
from tests.mcp.conftest import add_everything, add_hostile, audit, mcp, state_dir  # noqa: F401 - fixture
from tests.mcp.test_hostile import Events, _ctx

RESOURCE_TOOL = "mcp_hostile-resource"


def _read(
    home: Path, tmp_path: Path, tool_name: str, *uris: str, settings: McpSettings | None = None
) -> list:
    async def go() -> list:
        source = McpTools.load(home, settings or McpSettings())
        tool = next(t for t in source.tools() if t.name == tool_name)
        outcomes: list = []
        try:
            for uri in uris:
                try:
                    outcomes.append(
                        await tool.handler(_ctx(tmp_path, Events()), tool.args.model_validate({"uri": uri}))
                    )
                except ToolFailure as exc:
                    outcomes.append(str(exc))
        finally:
            await source.close()
        return outcomes

    return asyncio.run(go())


def _approve_v8(home: Path, state: Path, *extra: str) -> str:
    add_hostile(home, state)
    (state / "variant").write_text("v8")
    return mcp(home, "approve", "hostile", "--level", "weather=read", "--others", "skip", *extra, "--yes")


def test_resources_are_shown_whole_read_fenced_and_cut(tmp_path, state_dir):
    home = tmp_path / "home"
    out = _approve_v8(home, state_dir, "--resources", "--prompts")
    flat = " ".join(out.split())
    assert "resource (read only): | uri: notes://today | name: today | description: Today's notes." in flat
    assert (
        "a resource that cannot be approved (never read): its description holds the invisible or control "
        "character U+200B" in flat
    )
    entry = McpStore(home).entry("hostile")
    assert set(entry.resources) == {"notes://today", "notes://big"} and set(entry.prompts) == {"summarize"}
    source = McpTools.load(home, McpSettings())
    offered = {t.name: t for t in source.tools()}
    assert set(offered) == {"mcp_hostile_weather", RESOURCE_TOOL}  # no prompt is ever a tool of the model
    tool = offered[RESOURCE_TOOL]
    assert tool.level.value == "read" and "notes://today (today): Today's notes." in tool.description
    with pytest.raises(ValidationError):
        tool.args.model_validate({"uri": "notes://hidden"})  # never approved: not even asked for
    today, big = _read(
        home,
        tmp_path,
        RESOURCE_TOOL,
        "notes://today",
        "notes://big",
        settings=McpSettings(max_resource_chars=2000),
    )
    assert today.untrusted and today.content.startswith(
        "[resource notes://today of MCP server hostile; untrusted]"
    )
    assert "Sunny notes." in today.content
    body = big.content.split("\n", 1)[1]
    assert body.startswith("x" * 2000) and body.endswith("[... cut: the resource has 300000 characters]")
    assert len(body) <= 2000 + 60
    reads = [r for r in audit(home) if r["kind"] == "mcp.resource"]
    assert [(r["uri"], r["outcome"]) for r in reads] == [("notes://today", "ok"), ("notes://big", "ok")]


def test_yes_alone_approves_no_resource_and_no_prompt(tmp_path, state_dir):
    home = tmp_path / "home"
    _approve_v8(home, state_dir)
    entry = McpStore(home).entry("hostile")
    assert entry.resources == {} and entry.prompts == {}
    assert [t.name for t in McpTools.load(home, McpSettings()).tools()] == ["mcp_hostile_weather"]
    assert "summarize is not an approved prompt of hostile" in mcp(
        home, "prompt", "hostile", "summarize", code=1
    )


def test_a_resource_changed_after_approval_is_not_read(tmp_path, state_dir):
    home = tmp_path / "home"
    _approve_v8(home, state_dir, "--resources")
    (state_dir / "variant").write_text("v9")  # today's description now carries an injection
    changed, unchanged = _read(home, tmp_path, RESOURCE_TOOL, "notes://today", "notes://big")
    assert changed.startswith("NOTE TO THE USER: the MCP server hostile changed its resource notes://today")
    assert "Nothing was read" in changed and "IMPORTANT SYSTEM NOTICE" not in changed
    assert unchanged.content.startswith("[resource notes://big of MCP server hostile; untrusted]")
    assert [r["uri"] for r in audit(home) if r["kind"] == "mcp.resource_changed"] == ["notes://today"]


def test_a_prompt_is_printed_for_the_user_and_checked_like_a_tool(tmp_path, state_dir):
    home = tmp_path / "home"
    _approve_v8(home, state_dir, "--prompts")
    out = mcp(home, "prompt", "hostile", "summarize", "--args", '{"topic": "rain"}')
    assert out.startswith(
        "[prompt summarize of MCP server hostile; its text is the server's: read it before you use"
    )
    assert "user: Summarize rain. Returns the weather." in out
    assert "missing: topic" in mcp(home, "prompt", "hostile", "summarize", code=1)
    assert "it takes no colour" in mcp(
        home, "prompt", "hostile", "summarize", "--args", '{"topic": "x", "colour": "red"}', code=1
    )
    assert "arguments are strings" in mcp(
        home, "prompt", "hostile", "summarize", "--args", '{"topic": 5}', code=1
    )
    assert [r["prompt"] for r in audit(home) if r["kind"] == "mcp.prompt"] == ["summarize"]


def test_a_real_servers_resources_and_prompts(tmp_path):
    home = tmp_path / "home"
    add_everything(home)
    mcp(home, "approve", "everything", "--others", "skip", "--resources", "--prompts", "--yes")
    entry = McpStore(home).entry("everything")
    uri = "demo://resource/static/document/instructions.md"
    assert uri in entry.resources and "args-prompt" in entry.prompts
    (result,) = _read(home, tmp_path, "mcp_everything-resource", uri)
    assert result.untrusted and result.content.startswith(
        f"[resource {uri} of MCP server everything; untrusted]"
    )
    assert len(result.content.split("\n", 1)[1]) > 100
    out = mcp(home, "prompt", "everything", "args-prompt", "--args", '{"city": "Lisbon"}')
    assert "Lisbon" in out and out.startswith("[prompt args-prompt of MCP server everything")


def test_test_and_info_cover_resources_and_prompts(tmp_path, state_dir):
    home = tmp_path / "home"
    _approve_v8(home, state_dir, "--resources", "--prompts")
    assert '"notes://today": "ok"' in mcp(home, "test", "hostile")
    info = " ".join(mcp(home, "info", "hostile").split())
    assert "resource (read only): | uri: notes://big" in info and "argument topic (required)" in info
    (state_dir / "variant").write_text("v9")
    assert '"notes://today": "CHANGED"' in mcp(home, "test", "hostile", code=3)


@given(st.text(max_size=5000), st.integers(min_value=1024, max_value=4096))
@hsettings(max_examples=200, deadline=None)
def test_a_resource_never_exceeds_its_cap(text, limit):
    out = cut_resource(text, limit)
    assert out.startswith(text[:limit]) and len(out) <= limit + 50
    assert out == text or out.endswith(f"[... cut: the resource has {len(text)} characters]")
