"""A stdio MCP server allowed one host: out only through the bot's CONNECT proxy, with the skills'
SSRF rules. The network is the only thing stood in for: names resolve through a test resolver and
the proxy's outbound connection to the checked public address lands on a local echo server."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings as hsettings, strategies as st

from bot.config import McpSettings
from bot.mcp_servers.egress import Egress
from bot.mcp_servers.tools import McpTools
from bot.net.ssrf import FetchError, FetchPolicy
from bot.observability.audit import BotAudit
from tests.mcp.conftest import add_hostile, audit, mcp, state_dir  # noqa: F401 - fixture
from tests.mcp.test_hostile import Events, _ctx, home  # noqa: F401 - fixture

PUBLIC = "93.184.216.34"


def test_only_allowed_public_hosts_on_80_443_are_reached_through_the_proxy(home, tmp_path, state_dir):
    targets = [
        "api.allowed.test:443",
        "elsewhere.test:443",
        "loop.allowed.test:443",
        "api.allowed.test:22",
        f"{PUBLIC}:443",
        "169.254.169.254:80",
    ]
    add_hostile(
        home,
        state_dir,
        env={"TUNNEL_HOSTS": ",".join(targets)},
        network=("api.allowed.test", "*.allowed.test"),
    )
    assert "api.allowed.test" in mcp(home, "info", "hostile")
    mcp(home, "approve", "hostile", "--level", "tunnel=read", "--others", "skip", "--yes")
    names = {"api.allowed.test": PUBLIC, "loop.allowed.test": "127.0.0.1"}
    opened: list[tuple[str, int]] = []

    async def resolve(host: str, port: int) -> list[str]:
        if host not in names:
            raise OSError("no such host")
        return [names[host]]

    async def go() -> str:
        async def echo(reader, writer):
            writer.write(await reader.read(4))
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        async def opener(host: str, to_port: int):
            opened.append((host, to_port))
            return await asyncio.open_connection("127.0.0.1", port)

        source = McpTools.load(home, McpSettings(), FetchPolicy(), resolve=resolve, opener=opener)
        try:
            tool = next(t for t in source.tools() if t.name == "mcp_hostile_tunnel")
            out = await tool.handler(_ctx(tmp_path, Events()), tool.args.model_validate({}))
        finally:
            await source.close()
            server.close()
        return out.content

    found = json.loads(asyncio.run(go()).split("\n", 1)[1])
    assert found["api.allowed.test:443"] == "HTTP/1.1 200 Connection Established echo=ping"
    assert opened == [(PUBLIC, 443)]  # the checked address, nothing else
    for target in targets[1:]:
        assert found[target].startswith("HTTP/1.1 403"), (target, found[target])
    assert found["direct"] in ("OSError", "PermissionError") or "Unreachable" in found["direct"]
    assert found["proxy_env"] == "http://127.0.0.1:3128"
    egress = [r for r in audit(home) if r["kind"] == "mcp.egress"]
    reasons = {r["host"]: r.get("reason", "") for r in egress if r["outcome"] == "refused"}
    assert "not a host the user allowed" in reasons["elsewhere.test"]
    assert "loopback" in reasons["loop.allowed.test"]
    assert "literal IP" in reasons[PUBLIC] and "literal IP" in reasons["169.254.169.254"]
    assert "port 22" in [r for r in egress if r["port"] == 22][0]["reason"]
    assert [r["address"] for r in egress if r["outcome"] == "open"] == [PUBLIC]


def test_a_server_allowed_hosts_does_not_start_when_web_access_is_off(home, tmp_path, state_dir):
    add_hostile(home, state_dir, network=("api.allowed.test",))
    mcp(home, "approve", "hostile", "--level", "tunnel=read", "--others", "skip", "--yes")

    async def go() -> str:
        source = McpTools.load(home, McpSettings(), None)
        try:
            tool = next(t for t in source.tools() if t.name == "mcp_hostile_tunnel")
            from bot.tools.base import ToolFailure

            try:
                await tool.handler(_ctx(tmp_path, Events()), tool.args.model_validate({}))
            except ToolFailure as exc:
                return str(exc)
            return "ran"
        finally:
            await source.close()

    assert "web access is disabled" in asyncio.run(go())


@given(
    host=st.one_of(
        st.sampled_from(
            [
                "api.allowed.test",
                "x.allowed.test",
                "allowed.test",
                "evil.test",
                "api.allowed.test.evil.test",
                "127.0.0.1",
                "[::1]",
                "0x7f000001",
                "metadata.google.internal",
                "API.ALLOWED.TEST.",
            ]
        ),
        st.from_regex(r"[a-z0-9.\-]{1,30}", fullmatch=True),
    ),
    port=st.integers(min_value=0, max_value=70000),
)
@hsettings(max_examples=200, deadline=None)
def test_a_tunnel_opens_only_to_an_allowed_name_on_80_or_443(host, port):
    egress = Egress(
        "s",
        ("api.allowed.test", "*.allowed.test"),
        BotAudit.__new__(BotAudit),
        FetchPolicy(),
        resolve=_public,
    )

    async def check() -> str | None:
        try:
            return await egress._check(*Egress._target(f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode()))
        except FetchError:
            return None

    opened = asyncio.run(check())
    name = host.lower().rstrip(".")
    allowed = (
        name == "api.allowed.test" or (name.endswith(".allowed.test") and name != ".allowed.test")
    ) and port in (80, 443)
    assert (opened == PUBLIC) == allowed, (host, port, opened)


async def _public(host: str, port: int) -> list[str]:
    return [PUBLIC]


def test_anything_but_connect_is_refused_before_any_lookup():
    for head in (
        b"GET http://api.allowed.test/ HTTP/1.1\r\n\r\n",
        b"CONNECT api.allowed.test HTTP/1.1\r\n\r\n",
        b"\xff\xfe\r\n\r\n",
        b"CONNECT :443 HTTP/1.1\r\n\r\n",
    ):
        try:
            Egress._target(head)
        except (FetchError, UnicodeDecodeError):
            continue
        raise AssertionError(head)
