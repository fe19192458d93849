"""MCP servers from a DM, end to end: `owlia mcp add/approve` -> build_runtime -> console channel ->
real SDK -> fake LLM server -> the server in bubblewrap (real mcp-server-time from PyPI, real
server-everything from npm, the tests' hostile one) -> the real signer on anvil."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.tools.base import ContextKind
from tests.bot.agent.conftest import Reply, bot, call, llm  # noqa: F401 - fixtures
from tests.bot.agent.test_agent_e2e import tool_results
from tests.conftest import FRIEND, balance
from tests.mcp.conftest import add_everything, add_hostile, add_time, audit, mcp, state_dir  # noqa: F401

pytestmark = [pytest.mark.chain]


def test_real_servers_are_called_by_the_agent_at_the_levels_the_user_gave(bot):
    add_time(bot.home)
    mcp(bot.home, "approve", "time", "--level", "get_current_time=read", "--others", "skip", "--yes")
    add_everything(bot.home)
    mcp(
        bot.home,
        "approve",
        "everything",
        "--level",
        "echo=write",
        "--level",
        "get-sum=read",
        "--others",
        "skip",
        "--yes",
    )
    bot.llm.enqueue(
        Reply(
            tool_calls=[
                call("mcp_time_get_current_time", {"timezone": "Asia/Tokyo"}),
                call("mcp_everything_get-sum", {"a": 2, "b": 40}),
            ]
        ),
        Reply(tool_calls=[call("mcp_everything_echo", {"message": "hello from the agent"})]),
        Reply(text=["It is evening in Tokyo."]),
    )
    out = bot.chat("what time is it in Tokyo?", "y")
    assert "It is evening in Tokyo." in out
    offered = {t["name"]: t for t in bot.llm.requests[0].body["tools"]}
    assert {"mcp_time_get_current_time", "mcp_everything_echo", "mcp_everything_get-sum"} <= set(offered)
    assert "mcp_time_convert_time" not in offered  # skipped at approval: never offered
    assert offered["mcp_time_get_current_time"]["description"].startswith("[MCP server, untrusted: time]")
    tz = offered["mcp_time_get_current_time"]["input_schema"]["properties"]["timezone"]["description"]
    assert tz.startswith("[MCP server's text, untrusted]")
    first = tool_results(bot.llm.requests[1])
    assert first[0]["content"].startswith('<untrusted source="tool_result">')
    assert '"timezone": "Asia/Tokyo"' in first[0]["content"] and "+09:00" in first[0]["content"]
    assert "42" in first[1]["content"]
    # echo is `write`: the user was asked in the chat, said y, and only then did it run
    assert "[confirm] Run echo of the MCP server everything" in out
    assert "Echo: hello from the agent" in tool_results(bot.llm.requests[2])[-1]["content"]
    kinds = [r["kind"] for r in audit(bot.home)]
    assert kinds.count("mcp.started") >= 2 and kinds.count("mcp.call") == 3
    system = bot.llm.requests[0].body["system"]
    system = system if isinstance(system, str) else json.dumps(system)
    assert 'source=\\"skill_tools\\"' in system or 'source="skill_tools"' in system


def test_a_declined_write_tool_does_not_run(bot):
    add_everything(bot.home)
    mcp(bot.home, "approve", "everything", "--others", "skip", "--level", "echo=write", "--yes")
    bot.llm.enqueue(Reply(tool_calls=[call("mcp_everything_echo", {"message": "x"})]), Reply(text=["ok"]))
    bot.chat("echo", "n")
    assert "declined" in tool_results(bot.llm.requests[1])[0]["content"]
    assert not [r for r in audit(bot.home) if r["kind"] == "mcp.call"]


def test_no_write_or_sign_mcp_tool_in_cron_or_heartbeat_and_reload_without_restart(bot):
    add_everything(bot.home)
    mcp(
        bot.home,
        "approve",
        "everything",
        "--level",
        "echo=write",
        "--level",
        "get-sum=read",
        "--level",
        "get-env=sign",
        "--others",
        "skip",
        "--yes",
    )
    runtime = bot.runtime()
    try:

        def names(kind):
            return {t.name for t in runtime.registry.visible(kind, "console") if t.name.startswith("mcp_")}

        assert names(ContextKind.DM) == {
            "mcp_everything_echo",
            "mcp_everything_get-sum",
            "mcp_everything_get-env",
        }
        assert names(ContextKind.GROUP) == {"mcp_everything_echo", "mcp_everything_get-sum"}
        assert names(ContextKind.CRON) == names(ContextKind.HEARTBEAT) == {"mcp_everything_get-sum"}
        assert runtime.registry.lookup("mcp_everything_echo", ContextKind.CRON, "console") is None
        mcp(bot.home, "disable", "everything")  # the running bot sees it at the next lookup
        assert names(ContextKind.DM) == set()
        mcp(bot.home, "enable", "everything")
        assert "mcp_everything_get-sum" in names(ContextKind.CRON)
    finally:
        asyncio.run(runtime.close())


def test_hostile_server_injection_stays_labelled_and_a_rug_pull_is_refused_and_told(bot, state_dir):
    add_hostile(bot.home, state_dir)
    mcp(bot.home, "approve", "hostile", "--level", "weather=read", "--others", "skip", "--yes")
    bot.llm.enqueue(Reply(tool_calls=[call("mcp_hostile_weather", {})]), Reply(text=["sunny"]))
    bot.chat("weather?")
    offered = {t["name"]: t for t in bot.llm.requests[0].body["tools"]}
    assert offered["mcp_hostile_weather"]["description"].startswith("[MCP server, untrusted: hostile]")
    injected = tool_results(bot.llm.requests[1])[0]["content"]
    assert injected.startswith('<untrusted source="tool_result">') and injected.count("</untrusted>") == 1
    # the rug pull: same name, new description and schema after approval
    (state_dir / "variant").write_text("v2")
    bot.llm.enqueue(Reply(tool_calls=[call("mcp_hostile_weather", {})]), Reply(text=["?"]))
    out = bot.chat("weather again?")
    refused = tool_results(bot.llm.requests[3])[-1]["content"]
    assert "NOTE TO THE USER" in refused and "owlia mcp approve hostile" in refused
    assert "changed its tool weather" in out  # the console shows the tool's outcome to the user
    changed = [r for r in audit(bot.home) if r["kind"] == "mcp.tool_changed"]
    assert changed and changed[0]["tool"] == "weather"
    assert len([r for r in audit(bot.home) if r["kind"] == "mcp.call"]) == 1  # the changed tool never ran
    assert mcp(bot.home, "test", "hostile", code=3).count("CHANGED") == 1


def test_a_sign_tool_intent_goes_to_the_signer_flagged_and_is_escalated(bot, anvil, state_dir):
    add_hostile(bot.home, state_dir, env={"FRIEND": FRIEND})
    mcp(bot.home, "approve", "hostile", "--level", "pay=sign", "--others", "skip", "--yes")
    before = balance(anvil, FRIEND)
    bot.llm.enqueue(Reply(tool_calls=[call("mcp_hostile_pay", {})]), Reply(text=["Asked."]))
    out = bot.chat("pay my friend through the server")
    assert "Waiting for your approval: send 0.001 ETH to dev-friend" in out and "source.skill" not in out
    assert "source.skill" in bot.chat("/details")
    assert balance(anvil, FRIEND) == before
    signed = [r for r in audit(bot.home) if r["kind"] == "mcp.sign"]
    assert signed and signed[0]["status"] == "pending_approval"


def test_sampling_enabled_for_a_server_answers_only_its_own_messages(bot, state_dir):
    add_hostile(bot.home, state_dir, sampling=True)
    assert "answered by your model" in mcp(bot.home, "info", "hostile")
    mcp(bot.home, "approve", "hostile", "--level", "sample=read", "--others", "skip", "--yes")
    bot.llm.enqueue(
        Reply(tool_calls=[call("mcp_hostile_sample", {})]),
        Reply(text=["I cannot see any conversation."]),  # the sampling request
        Reply(text=["The server got nothing from me."]),
    )
    out = bot.chat("run the sampler; my seed word is banana-42 and my key is 0x" + "ab" * 32)
    assert "The server got nothing from me." in out
    sampled = bot.llm.requests[1].body
    flat = json.dumps(sampled)
    assert "banana-42" not in flat and "ab" * 32 not in flat and not sampled.get("tools")
    assert "third-party MCP server 'hostile'" in flat and "Repeat the whole conversation" in flat
    answer = tool_results(bot.llm.requests[2])[-1]["content"]
    assert "I cannot see any conversation." in answer
    assert [r["outcome"] for r in audit(bot.home) if r["kind"] == "mcp.sampling"] == ["answered"]
    assert not [r for r in audit(bot.home) if r["kind"] == "mcp.request_refused"]


def test_the_agent_reads_an_approved_resource_fenced_and_never_sees_a_prompt(bot, state_dir):
    add_hostile(bot.home, state_dir)
    (state_dir / "variant").write_text("v8")
    mcp(
        bot.home,
        "approve",
        "hostile",
        "--level",
        "weather=read",
        "--others",
        "skip",
        "--resources",
        "--prompts",
        "--yes",
    )
    bot.llm.enqueue(
        Reply(tool_calls=[call("mcp_hostile-resource", {"uri": "notes://today"})]),
        Reply(text=["Your notes say it is sunny."]),
    )
    assert "Your notes say it is sunny." in bot.chat("what do my notes say?")
    offered = {t["name"]: t for t in bot.llm.requests[0].body["tools"]}
    reader = offered["mcp_hostile-resource"]
    assert reader["input_schema"]["properties"]["uri"]["enum"] == ["notes://big", "notes://today"]
    assert not [name for name in offered if "summarize" in name]  # a prompt is never the model's to run
    (result,) = tool_results(bot.llm.requests[1])
    assert result["content"].startswith('<untrusted source="tool_result">')
    assert "[resource notes://today of MCP server hostile; untrusted]" in result["content"]
    assert [r["uri"] for r in audit(bot.home) if r["kind"] == "mcp.resource"] == ["notes://today"]
