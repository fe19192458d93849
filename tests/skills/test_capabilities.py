"""core.fetch, core.chain and core.sign: only what SKILL.md declared, under the bot's own rules."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from bot.net.ssrf import FetchPolicy
from bot.skills.capabilities import PER_CALL, PER_MINUTE, CallState, Capabilities, skill_fetch_policy
from bot.tools.chain_reader import RpcChainReader
from signer.wire.client import SignerClient
from skills_runtime.process import CallbackDenied
from tests.bot.net.conftest import local_server
from tests.conftest import FRIEND, balance
from tests.skills.conftest import EXAMPLES, HOSTILE, audit_records, needs_bwrap

pytestmark = needs_bwrap
EVIL = HOSTILE / "evil"


def resolver(mapping: dict[str, str]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in mapping:
            raise OSError("no such host")
        return [mapping[host]]

    return resolve


def test_core_fetch_reaches_only_declared_hosts_and_never_the_bots_private_networks_or_ports(
    run_skills, home
):
    async def scenario(loaded):
        async with local_server() as server:
            port = server.port
            found = {
                "opened_port": await loaded.result(
                    "evil", "fetch", url=f"http://api.allowed.test:{port}/json"
                ),
                "opened_network": await loaded.result("evil", "fetch", url="http://api.allowed.test/json"),
                "literal": await loaded.result("evil", "fetch", url=f"http://127.0.0.1:{port}/json"),
                "undeclared": await loaded.result("evil", "fetch", url="http://elsewhere.test/json"),
                "metadata": await loaded.result(
                    "evil", "fetch", url="http://169.254.169.254/latest/meta-data/"
                ),
                "leak": await loaded.result("evil", "fetch", url=f"http://api.allowed.test/?k={'ab' * 32}"),
            }
            return found, server.seen

    # The user opened 127.0.0.1 and high ports for the bot's own web tools (their own node): a skill
    # gets neither, only public addresses of the hosts it declared, on ports 80 and 443.
    policy = FetchPolicy(allow_private=("127.0.0.1/32",), allowed_ports=(80, 443, *range(1024, 65536)))
    resolve = resolver({"api.allowed.test": "127.0.0.1", "elsewhere.test": "127.0.0.1"})
    found, seen = run_skills(scenario, EVIL, policy=policy, resolve=resolve)
    assert "is not allowed" in found["opened_port"]["refused"]
    assert "resolves to a loopback address" in found["opened_network"]["refused"]
    assert "loopback" in found["literal"]["refused"]
    assert "not on the allow list" in found["undeclared"]["refused"]
    assert "refused" in found["metadata"] and "refusing to send" in found["leak"]["refused"]
    assert seen == []  # nothing reached the server
    outcomes = [(r["method"], r["outcome"]) for r in audit_records(home) if r["kind"] == "skill.callback"]
    assert outcomes == [("core.fetch", "denied")] * 6


def test_a_skills_fetch_policy_keeps_the_bots_limits_and_drops_what_it_opened():
    bot = FetchPolicy(
        allow_domains=("*.example.org",),
        deny_domains=("bad.example.com",),
        max_bytes=1234,
        timeout=3.0,
        allow_private=("10.0.0.0/8",),
        allowed_ports=(80, 443, 8545),
    )
    policy = skill_fetch_policy(bot, ("api.example.com",))
    assert policy.allow_domains == ("api.example.com",) and policy.deny_domains == ("bad.example.com",)
    assert policy.allow_private == () and policy.private_networks == () and policy.allowed_ports == (80, 443)
    assert (policy.max_bytes, policy.timeout, policy.max_redirects) == (1234, 3.0, bot.max_redirects)


def test_a_declared_name_that_resolves_to_loopback_is_blocked(run_skills):
    async def scenario(loaded):
        return await loaded.result("evil", "fetch", url="http://api.allowed.test/json")

    found = run_skills(
        scenario, EVIL, policy=FetchPolicy(), resolve=resolver({"api.allowed.test": "127.0.0.1"})
    )
    assert "resolves to a loopback address" in found["refused"]


def test_core_fetch_is_off_when_the_bot_has_no_web_access(run_skills):
    async def scenario(loaded):
        return await loaded.result("evil", "fetch", url="https://api.allowed.test/")

    assert "web access is disabled" in run_skills(scenario, EVIL, policy=None)["refused"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(PER_CALL)), max_size=80), st.integers(1, 5))
def test_rate_limits_hold_for_any_sequence_of_requests(methods, calls):
    caps = Capabilities(audit=None, fetch_policy=None)  # type: ignore[arg-type]  # counting needs no audit
    granted: dict[str, int] = {}
    per_call = [CallState() for _ in range(calls)]
    for i, method in enumerate(methods):
        state = per_call[i % calls]
        try:
            caps._charge("s", method, state)
        except CallbackDenied:
            continue
        granted[method] = granted.get(method, 0) + 1
        assert state.used[method] <= PER_CALL[method]
    for method, count in granted.items():
        assert count <= min(PER_MINUTE[method], PER_CALL[method] * calls)


def test_gas_tracker_reads_the_chain_through_core_chain(run_skills, anvil):
    from bot.devchain import rpc

    async def scenario(loaded):
        return await loaded.result("gas_tracker", "gas_price", gas_units=50000)

    found = run_skills(scenario, EXAMPLES / "gas_tracker", chain=RpcChainReader({31337: anvil.url}))
    expected = int(rpc(anvil.url, "eth_gasPrice", []), 16)
    assert int(found["gas_price_wei"]) == expected and int(found["cost_wei"]) == expected * 50000
    assert found["block"] >= 0


def test_core_sign_goes_to_the_signer_marked_as_from_the_skill_and_is_capped(run_skills, stack, anvil, home):
    stack.funded_session_key()
    token = stack.client_token("skills")

    async def scenario(loaded):
        signer = SignerClient(stack.socket, token)
        loaded.ctx.services.signer = signer
        try:
            small = await loaded.call("spender", "drain", to=FRIEND, wei=str(10**15), times=1)
            big = await loaded.result("spender", "drain", to=FRIEND, wei=str(100 * 10**18), times=5)
            smuggle = await loaded.result("spender", "drain", to=FRIEND, wei="1", times=1, flags=True)
        finally:
            await signer.close()
        return small, big, smuggle

    before = balance(anvil, FRIEND)
    small, big, smuggle = run_skills(scenario, HOSTILE / "spender")
    # A transfer the agent could make on its own is escalated when a skill asks for it.
    assert small.data["status"] == "pending_approval" and small.data["rule_id"] == "source.skill"
    assert [o["status"] for o in big[:2]] == ["pending_approval"] * 2  # nothing signed; the companion decides
    assert all("refused" in o for o in big[2:])
    assert "at most 2 per tool call" in big[2]["refused"]
    assert "may not carry ['flags']" in smuggle[0]["refused"]
    assert balance(anvil, FRIEND) == before
    signs = [r for r in audit_records(home) if r["kind"] == "skill.callback" and r["method"] == "core.sign"]
    assert [r["outcome"] for r in signs].count("ok") == 3
