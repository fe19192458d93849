"""A streamable-HTTP MCP server (the real server-everything, run by the test on loopback), reached
only at a URL the user allowed, called by the agent through the SDK's streamable-HTTP client."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest
import yaml

from tests.bot.agent.conftest import Reply, bot, call, llm  # noqa: F401 - fixtures
from tests.bot.agent.test_agent_e2e import tool_results
from tests.mcp.conftest import EVERYTHING, audit, mcp

pytestmark = [pytest.mark.chain]


@pytest.fixture()
def http_server():
    with socket.socket() as probe:  # a free port, handed to the server (it does not report one it chose)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        ["/usr/bin/node", str(EVERYTHING), "streamableHttp"],
        env={"PORT": str(port), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def test_an_http_server_only_at_an_allowed_url(bot, http_server):
    mcp(bot.home, "add", "remote", "--url", http_server)
    assert "not in bot.mcp.allowed_urls" in mcp(bot.home, "approve", "remote", "--yes", code=1)
    section = yaml.safe_load((bot.home / "config.yaml").read_text())["bot"]
    bot.configure({**section, "mcp": {"allowed_urls": [http_server]}})
    mcp(bot.home, "approve", "remote", "--level", "get-sum=read", "--others", "skip", "--yes")
    bot.llm.enqueue(Reply(tool_calls=[call("mcp_remote_get-sum", {"a": 20, "b": 22})]), Reply(text=["42."]))
    assert "42." in bot.chat("add 20 and 22 remotely")
    result = tool_results(bot.llm.requests[1])[-1]["content"]
    assert "[result of MCP server remote, tool get-sum; untrusted]" in result and "42" in result
    # the user removes the URL from the allowlist: the running config no longer reaches it
    bot.configure({**section, "mcp": {"allowed_urls": []}})
    bot.llm.enqueue(Reply(tool_calls=[call("mcp_remote_get-sum", {"a": 1, "b": 1})]), Reply(text=["no."]))
    bot.chat("again")
    assert "not in bot.mcp.allowed_urls" in tool_results(bot.llm.requests[3])[-1]["content"]
    assert [r["transport"] for r in audit(bot.home) if r["kind"] == "mcp.started"] == ["http"]
