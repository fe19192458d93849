"""The bridge's abuse limits: the pure token bucket (property-tested), then floods against a real
bridge (uvicorn on a loopback port) in front of a real signer, with real HTTP and WebSocket clients.
Every refusal must hit only the peer, device or socket that caused it, and lose nothing queued."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from hypothesis import given, settings, strategies as st

from companion_bridge.app import CLOSE_RATE_LIMITED, CLOSE_TOO_BIG, RATE_LIMITED
from companion_bridge.companion.client import Choice, Companion, CompanionError
from companion_bridge.companion.wallet import CompanionWallet
from companion_bridge.limits import BridgeLimits, Guard
from companion_bridge.queue import DeliveryQueue
from companion_bridge.ratelimit import NS, Limiter, Rate
from policies.kernel.files import PathNotAllowed
from signer.wire.client import SignerClient
from signer.wire.messages import PAIR_DOMAIN, pair_body, pairing_mac, signed_message
from tests.companion.conftest import Tier1, request_for, start_bridge
from tests.conftest import STRANGER, SignerStack, as_json

chain = pytest.mark.chain
MAIN_KEY = secrets.token_bytes(32)  # every device of this module's signer holds this main key
WRONG_CODE = "AAAA-BBBB-CCCC-DDDD-EEEE-FFFF"

# ---- the token bucket: pure, so property-tested -------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 10**15

    def __call__(self) -> int:
        return self.now


rates = st.builds(Rate, st.integers(1, 20), st.sampled_from([0.1, 1 / 3, 1.0, 7.0, 50.0, 1000.0]))
steps = st.lists(st.tuples(st.integers(0, 3 * NS), st.integers(1, 5), st.booleans()), max_size=120)


@settings(max_examples=300, deadline=None)
@given(rate=rates, steps=steps, penalty=st.integers(0, 5))
def test_a_bucket_never_admits_more_than_burst_plus_rate_times_elapsed(rate, steps, penalty):
    clock = Clock()
    limiter = Limiter(rate, clock=clock)
    admitted: list[tuple[int, int]] = []
    for dt, cost, fail in steps:
        clock.now += dt
        cost = min(cost, rate.burst)
        if limiter.take("k", cost).allowed:
            admitted.append((clock.now, cost))
            if fail:
                limiter.penalize("k", penalty)
    interval = rate.interval_ns
    for i, (start, _) in enumerate(admitted):
        total = 0
        for end, cost in admitted[i:]:
            total += cost
            assert total * interval <= (end - start) + rate.burst * interval


@settings(max_examples=300, deadline=None)
@given(rate=rates, steps=steps, penalty=st.integers(0, 5))
def test_retry_after_is_exact_and_a_refusal_costs_nothing(rate, steps, penalty):
    clock = Clock()
    limiter = Limiter(rate, clock=clock)
    for dt, cost, fail in steps:
        clock.now += dt
        cost = min(cost, rate.burst)
        verdict = limiter.take("k", cost)
        if verdict.allowed:
            if fail:
                limiter.penalize("k", penalty)
            continue
        assert verdict.retry_after_ns > 0
        # Refused again one nanosecond early (and that costs nothing), admitted exactly on time.
        clock.now += verdict.retry_after_ns - 1
        assert not limiter.take("k", cost).allowed
        clock.now += 1
        assert limiter.take("k", cost).allowed


@settings(max_examples=200, deadline=None)
@given(rate=rates, gaps=st.lists(st.integers(0, 2 * NS), max_size=60))
def test_a_client_within_its_rate_is_never_refused_and_keys_are_independent(rate, gaps):
    clock = Clock()
    limiter = Limiter(rate, clock=clock)
    for _ in range(rate.burst):  # a full burst right away
        assert limiter.take("calm").allowed
    for gap in gaps:
        clock.now += rate.interval_ns + gap  # then no faster than the rate
        assert limiter.take("calm").allowed
        while limiter.take("noisy").allowed:  # another key drained to the bone next to it
            pass
    assert limiter.take("fresh").allowed


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(0, 50), max_size=200), max_keys=st.integers(1, 10))
def test_the_key_table_is_bounded_and_full_means_refused_not_forgotten(keys, max_keys):
    clock = Clock()
    limiter = Limiter(Rate(1, 1.0), max_keys=max_keys, clock=clock)
    seen: set[int] = set()  # time stands still: every bucket taken from stays empty
    for key in keys:
        verdict = limiter.take(key)
        assert len(limiter) <= max_keys
        assert verdict.allowed == (key not in seen and len(seen) < max_keys)
        if verdict.allowed:
            seen.add(key)
        else:
            assert verdict.retry_after_ns > 0
    clock.now += NS  # every bucket full again: forgotten, and room for new keys
    assert limiter.take("new").allowed


def test_a_rate_and_a_take_refuse_nonsense():
    for burst, per_second in ((0, 1.0), (1, 0.0), (1, -1.0), (1, float("nan"))):
        with pytest.raises(ValueError):
            Rate(burst, per_second)
    with pytest.raises(ValueError):
        Limiter(Rate(2, 1.0)).take("k", 3)
    for bad in (
        {"pair_failures_to_burn": 0},
        {"max_message_bytes": 10},
        {"auth_failure_penalty": -1},
        {"trusted_proxies": frozenset({"proxy.local"})},
        {"trusted_proxies": frozenset({"::0001"})},
    ):
        with pytest.raises(ValueError):
            BridgeLimits(**bad)


@settings(max_examples=200, deadline=None)
@given(peer=st.ip_addresses().map(str), forwarded=st.one_of(st.none(), st.text(max_size=80)))
def test_an_untrusted_peer_is_counted_as_itself_whatever_it_forwards(peer, forwarded):
    guard = Guard(BridgeLimits(trusted_proxies=frozenset({"10.0.0.2"})))
    assert guard.peer(peer, forwarded) == peer or peer == "10.0.0.2"


def test_forwarded_for_is_believed_only_from_a_trusted_proxy():
    untrusted = Guard(BridgeLimits())
    assert untrusted.peer("127.0.0.1", "203.0.113.9") == "127.0.0.1"
    trusted = Guard(BridgeLimits(trusted_proxies=frozenset({"127.0.0.1", "10.0.0.2"})))
    assert trusted.peer("127.0.0.1", "203.0.113.9") == "203.0.113.9"
    # The client can prepend anything; the rightmost hop no proxy of ours added is the one counted.
    assert trusted.peer("127.0.0.1", "1.2.3.4, 203.0.113.9, 10.0.0.2") == "203.0.113.9"
    assert trusted.peer("127.0.0.1", "not-an-ip") == "127.0.0.1"
    assert trusted.peer("127.0.0.1", None) == "127.0.0.1"
    assert trusted.peer("192.0.2.1", "203.0.113.9") == "192.0.2.1"


# ---- the queue file -------------------------------------------------------------------------


def test_the_queue_file_and_its_wal_are_private_even_with_a_loose_umask(tmp_path):
    home = tmp_path / "bridge"
    home.mkdir(mode=0o755)
    old = os.umask(0)
    try:
        queue = DeliveryQueue(home / "bridge.db")
        queue.put([{"seq": 1, "request": {"request_id": "req_1", "expires_at": time.time() + 60}}])
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        for name in ("bridge.db", "bridge.db-wal", "bridge.db-shm"):
            assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    finally:
        queue.close()
    (tmp_path / "elsewhere.db").touch()
    (tmp_path / "trap").mkdir(mode=0o700)
    (tmp_path / "trap" / "bridge.db").symlink_to(tmp_path / "elsewhere.db")
    with pytest.raises(PathNotAllowed):
        DeliveryQueue(tmp_path / "trap" / "bridge.db")


# ---- floods against a real bridge -----------------------------------------------------------


@pytest.fixture(scope="module")
def stack(tmp_path_factory, anvil):
    stack = SignerStack(tmp_path_factory.mktemp("limits"), anvil.url).start()
    yield stack
    stack.close()


@contextlib.contextmanager
def bridge_with(stack: SignerStack, root: Path, **limits) -> Iterator[Tier1]:
    bridge = start_bridge(stack, root / f"bridge{time.monotonic_ns()}", limits=BridgeLimits(**limits))
    try:
        yield Tier1(stack, bridge, root, None, main_key=MAIN_KEY)
    finally:
        bridge.stop()


def pair_proof(wallet: CompanionWallet, pairing_id: str, code: str) -> dict:
    body = pair_body(
        pairing_id, wallet.device_public_key, "phone", wallet.main_address, time.time(), secrets.token_hex(32)
    )
    message = signed_message(PAIR_DOMAIN, body)
    return {**body, "signature": wallet.device_sign(message), "mac": pairing_mac(code, message)}


async def post(http: aiohttp.ClientSession, url: str, body: dict, *hops: str) -> aiohttp.ClientResponse:
    """POST with one X-Forwarded-For line per hop (as a client, then a proxy, would add them)."""
    async with http.post(url, json=body, headers=[("X-Forwarded-For", hop) for hop in hops]) as resp:
        await resp.read()
        return resp


async def refused_pairings(tier: Tier1, pairing_id: str) -> int:
    audit = await tier.stack.call(tier.admin, "audit.tail", {"n": 500, "kind": "companion.pair_refused"})
    return sum(1 for e in audit["entries"] if e["body"].get("pairing_id") == pairing_id)


async def health(tier: Tier1) -> dict:
    async with aiohttp.ClientSession() as http, http.get(tier.bridge.url + "/v1/health") as resp:
        return await resp.json()


@chain
def test_a_pairing_flood_is_rationed_per_peer_and_a_guessed_code_is_burnt(stack, tmp_path, caplog):
    limits = {
        "pair_per_peer": Rate(4, 0.5),
        "pair_failure_penalty": 1,
        "pair_failures_to_burn": 3,
        "trusted_proxies": frozenset({"127.0.0.1"}),
    }
    with bridge_with(stack, tmp_path, **limits) as tier:

        async def scenario():
            url = tier.bridge.url + "/v1/pair"
            victim = tier.new_wallet("victim")
            pairing = await tier.stack.call(tier.admin, "companion.pair_begin", {"name": "phone"})
            pid = pairing["pairing_id"]
            async with aiohttp.ClientSession() as http:
                # One attacker floods guesses: a refusal costs two attempts, so two reach the signer.
                # The forwarded line it writes itself changes every time; the proxy's line has the last word.
                codes = [
                    (
                        await post(
                            http, url, pair_proof(victim, pid, WRONG_CODE), f"10.9.9.{i}", "203.0.113.9"
                        )
                    ).status
                    for i in range(10)
                ]
                assert codes == [403, 403] + [429] * 8
                resp = await post(http, url, pair_proof(victim, pid, WRONG_CODE), "203.0.113.9")
                assert resp.status == 429 and resp.headers["Retry-After"] == "2"
                assert await refused_pairings(tier, pid) == 2
                # The user, elsewhere, is not slowed by the attacker and pairs with the real code.
                resp = await post(http, url, pair_proof(victim, pid, pairing["code"]), "198.51.100.7")
                assert resp.status == 200

                # Guesses from many addresses burn the code after three refusals; the signer never
                # sees a fourth, not even the right code, and the user shows a new one.
                pairing = await tier.stack.call(tier.admin, "companion.pair_begin", {"name": "phone"})
                pid, second = pairing["pairing_id"], tier.new_wallet("second")
                for i in range(3):
                    resp = await post(http, url, pair_proof(second, pid, WRONG_CODE), f"192.0.2.{i}")
                    assert resp.status == 403
                async with http.post(
                    url,
                    json=pair_proof(second, pid, pairing["code"]),
                    headers={"X-Forwarded-For": "192.0.2.77"},
                ) as resp:
                    assert resp.status == 403 and "show a new one" in (await resp.json())["detail"]
                assert await refused_pairings(tier, pid) == 3
                fresh = await tier.stack.call(tier.admin, "companion.pair_begin", {"name": "phone"})
                assert (
                    await post(
                        http, url, pair_proof(second, fresh["pairing_id"], fresh["code"]), "192.0.2.77"
                    )
                ).status == 200
            refused = (await health(tier))["refused"]
            assert refused["pair"] == 9 and refused["pair_burnt"] == 1
            assert f"burnt pairing {pid}" in caplog.text
            # Every refusal is counted; the log gets one line per kind and peer per 10 s, not a flood.
            assert caplog.text.count("refused pair for 203.0.113.9") == 1
            for code in (pairing["code"], fresh["code"]):
                assert code not in caplog.text and code.replace("-", "") not in caplog.text

        asyncio.run(scenario())


@chain
def test_a_forged_forwarded_for_gets_no_fresh_bucket(stack, tmp_path):
    with bridge_with(stack, tmp_path, pair_per_peer=Rate(2, 0.1), pair_failure_penalty=0) as tier:

        async def scenario():
            wallet = tier.new_wallet("spoof")
            pairing = await tier.stack.call(tier.admin, "companion.pair_begin", {"name": "phone"})
            proofs = [pair_proof(wallet, pairing["pairing_id"], WRONG_CODE) for _ in range(4)]
            async with aiohttp.ClientSession() as http:  # a fresh forwarded address each time
                codes = [
                    (await post(http, tier.bridge.url + "/v1/pair", proof, f"198.51.100.{i}")).status
                    for i, proof in enumerate(proofs)
                ]
            assert codes == [403, 403, 429, 429]

        asyncio.run(scenario())


@chain
def test_a_login_flood_spends_only_that_peers_budget(stack, tmp_path):
    limits = {
        "auth_per_peer": Rate(6, 0.5),
        "auth_failure_penalty": 2,
        "trusted_proxies": frozenset({"127.0.0.1"}),
    }
    with bridge_with(stack, tmp_path, **limits) as tier:

        async def scenario():
            device = await paired(tier, "victim")
            base, stranger = tier.bridge.url, "203.0.113.5"
            async with aiohttp.ClientSession() as http:
                # A forged login for the victim's id costs challenge (1) + token (1) + failure (2).
                ask = {"device_id": device.wallet.device_id}
                async with http.post(
                    base + "/v1/auth/challenge", json=ask, headers={"X-Forwarded-For": stranger}
                ) as resp:
                    nonce = (await resp.json())["nonce"]
                forged = {**ask, "nonce": nonce, "ts": time.time(), "signature": "33" * 64}
                assert (await post(http, base + "/v1/auth/token", forged, stranger)).status == 401
                codes = [
                    (await post(http, base + "/v1/auth/challenge", ask, stranger)).status for _ in range(4)
                ]
                assert codes == [200, 200, 429, 429]
                ws = await http.ws_connect(
                    base.replace("http", "ws") + "/v1/ws", headers={"X-Forwarded-For": stranger}
                )
                assert (await next_close(ws)).data == CLOSE_RATE_LIMITED
            await device.connect()  # the device, from its own address, logs in and connects as usual
            assert await device.call("approvals.state") is not None
            refused = (await health(tier))["refused"]
            assert refused["auth"] == 3 and refused["login"] == 1
            await device.close()

        asyncio.run(scenario())


@chain
def test_a_device_flooding_logins_and_connects_is_refused_while_another_works(stack, tmp_path, caplog):
    limits = {"tokens_per_device": Rate(3, 0.5), "connects_per_device": Rate(2, 0.5)}
    with bridge_with(stack, tmp_path, **limits) as tier:

        async def scenario():
            a = await paired(tier, "noisy")
            b = await paired(tier, "calm")
            tokens = [await a.login() for _ in range(3)]
            with pytest.raises(CompanionError, match=r"retry after 2 s") as refused:
                await a.login()
            assert refused.value.code == 429
            assert all(t not in str(refused.value) for t in tokens)
            await b.connect()  # the other device logs in and connects as usual
            assert await b.call("approvals.state") is not None
            # A stranger who knows a's id can neither log in as it nor spend its budget.
            async with aiohttp.ClientSession() as http:
                for _ in range(5):
                    challenge = await (
                        await http.post(
                            tier.bridge.url + "/v1/auth/challenge", json={"device_id": a.wallet.device_id}
                        )
                    ).json()
                    forged = {
                        "device_id": a.wallet.device_id,
                        "nonce": challenge["nonce"],
                        "ts": time.time(),
                        "signature": "22" * 64,
                    }
                    assert (await post(http, tier.bridge.url + "/v1/auth/token", forged)).status == 401
            await asyncio.sleep(2.0)  # the login bucket refills with time: the clock advancing is under test
            token = await a.login()  # one token refilled, and the stranger took none of it

            # Connects: two sessions in the burst, the third is closed with 4429 and a retry-after.
            first, second, third = (Companion(a.wallet, tier.bridge.url) for _ in range(3))
            await first.connect(token)
            await second.connect(token)
            with pytest.raises(CompanionError) as closed:
                await third.connect(token)
            assert closed.value.code == CLOSE_RATE_LIMITED
            assert await first.call("approvals.state") is not None  # the open sessions are untouched
            other = Companion(b.wallet, tier.bridge.url)
            await other.connect()
            refused_counts = (await health(tier))["refused"]
            assert refused_counts["token"] == 1 and refused_counts["connect"] == 1
            assert refused_counts["login"] == 5
            assert f"refused token for {a.wallet.device_id}" in caplog.text
            assert all(t not in caplog.text and t.split(".")[1] not in caplog.text for t in [*tokens, token])
            for c in (a, b, first, second, third, other):
                await c.close()

        asyncio.run(scenario())


@chain
def test_a_message_flood_or_an_oversized_message_closes_only_that_socket(stack, tmp_path):
    with bridge_with(stack, tmp_path, messages_per_socket=Rate(5, 1.0), max_message_bytes=4096) as tier:

        async def scenario():
            a = await paired(tier, "flooder")
            b = await paired(tier, "bystander")
            await b.connect()
            token = await a.login()
            sibling = Companion(a.wallet, tier.bridge.url)
            await sibling.connect(token)
            async with aiohttp.ClientSession() as http:
                ws = await http.ws_connect(tier.bridge.url.replace("http", "ws") + "/v1/ws")
                await ws.send_json({"type": "hello", "token": token})
                assert json.loads((await ws.receive(timeout=5)).data)["type"] == "welcome"
                for i in range(20):
                    await ws.send_json({"type": "noise", "n": i})
                close = await next_close(ws)
                assert close.data == CLOSE_RATE_LIMITED and re.search(r"retry after \d+ s", close.extra)

                big = await http.ws_connect(tier.bridge.url.replace("http", "ws") + "/v1/ws")
                await big.send_json({"type": "hello", "token": token})
                await big.receive(timeout=5)
                await big.send_str(json.dumps({"type": "noise", "pad": "x" * 5000}))
                assert (await next_close(big)).data == CLOSE_TOO_BIG
            # The same device's other socket and the other device carry on.
            assert await sibling.call("approvals.state") is not None
            assert await b.call("approvals.state") is not None
            refused = (await health(tier))["refused"]
            assert refused["message_rate"] == 1 and refused["message_size"] == 1
            for c in (a, b, sibling):
                await c.close()

        asyncio.run(scenario())


@chain
def test_an_answer_refused_for_rate_is_kept_and_accepted_after_the_retry_after(stack, tmp_path):
    with bridge_with(stack, tmp_path, answers_per_device=Rate(1, 1.0)) as tier:

        async def scenario():
            companion = await paired(tier, "answerer")
            await companion.connect()
            bot = tier.bot_token()
            async with SignerClient(tier.stack.socket, bot) as client:
                pending = as_json(await client.sign({"chain_id": 31337, "to": STRANGER, "value": "1000"}))
            request = await request_for(companion, pending["request_id"])
            with pytest.raises(CompanionError):  # a junk answer spends the one answer in the bucket
                await companion.call(
                    "approvals.answer", {"request_id": "req_junk", "device_id": companion.wallet.device_id}
                )
            answer = companion.build_answer(request, Choice("deny", note="too fast"))
            with pytest.raises(CompanionError, match=r"retry after 1 s") as refused:
                await companion.call("approvals.answer", answer)
            assert refused.value.code == RATE_LIMITED
            # Nothing was lost: still pending on the signer, still in the bridge's backlog.
            status = await tier.stack.call(bot, "sign.status", {"request_id": pending["request_id"]})
            assert status["status"] == "pending_approval"
            assert any(pending["request_id"] in t for t in tier.bridge.bridge.queue.backlog_json())
            await asyncio.sleep(1.0)  # the "retry after 1 s" it was told: waiting it out is what is tested
            result = await companion.call("approvals.answer", answer)  # the very same answer, on time
            assert result["status"] == "denied"
            assert (await health(tier))["refused"]["answer"] == 1
            await companion.close()

        asyncio.run(scenario())
    assert stat.S_IMODE(tier.bridge.options.home.stat().st_mode) == 0o700
    assert stat.S_IMODE((tier.bridge.options.home / "bridge.db").stat().st_mode) == 0o600


async def paired(tier: Tier1, name: str) -> Companion:
    pairing = await tier.stack.call(tier.admin, "companion.pair_begin", {"name": name})
    companion = Companion(tier.new_wallet(name), tier.bridge.url)
    await companion.pair(pairing["pairing_id"], pairing["code"], pairing["signer_key"])
    return companion


async def next_close(ws: aiohttp.ClientWebSocketResponse) -> aiohttp.WSMessage:
    """Skip frames still in flight (backlog, replies) up to the server's close."""
    while True:
        msg = await ws.receive(timeout=5)
        if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
            return msg
