"""Pairing proofs, device records, bridge login challenges and short-lived tokens."""

from __future__ import annotations

import asyncio
import secrets
import time

import aiohttp
import pytest
from hypothesis import given, settings, strategies as st

from companion_bridge.companion.client import Companion, CompanionError
from companion_bridge.tokens import TokenIssuer
from signer.wire.exchange import SignerError
from signer.wire.messages import PAIR_DOMAIN, pair_body, pairing_mac, signed_message
from tests.companion.conftest import Tier1
from tests.fakes.certificates import self_signed

pytestmark = [pytest.mark.chain]


async def begin(tier1: Tier1) -> dict:
    return await tier1.stack.call(tier1.admin, "companion.pair_begin", {"name": "phone"})


def test_pairing_refuses_wrong_reused_and_forged_proofs_and_audits_them(tier1):
    async def scenario():
        wallet = tier1.new_wallet()
        companion = Companion(wallet, tier1.bridge.url)
        pairing = await begin(tier1)
        with pytest.raises(CompanionError, match="wrong pairing code"):
            await companion.pair(pairing["pairing_id"], "AAAA-BBBB-CCCC-DDDD-EEEE-FFFF")
        # The code never crosses the bridge: only an HMAC of the message keyed by sha256(code).
        ts, nonce = time.time(), "ab" * 32
        body = pair_body(
            pairing["pairing_id"], wallet.device_public_key, "phone", wallet.main_address, ts, nonce
        )
        message = signed_message(PAIR_DOMAIN, body)
        forged = {
            **body,
            "main_address": wallet.main_address,
            "signature": "11" * 64,
            "mac": pairing_mac(pairing["code"], message),
        }
        with pytest.raises(CompanionError, match="signature does not verify"):
            await companion._post("/v1/pair", forged)
        stale = pair_body(
            pairing["pairing_id"], wallet.device_public_key, "phone", wallet.main_address, ts - 600, nonce
        )
        stale_msg = signed_message(PAIR_DOMAIN, stale)
        with pytest.raises(CompanionError, match="stale"):
            await companion._post(
                "/v1/pair",
                {
                    **stale,
                    "signature": wallet.device_sign(stale_msg),
                    "mac": pairing_mac(pairing["code"], stale_msg),
                },
            )
        reply = await companion.pair(pairing["pairing_id"], pairing["code"])
        assert reply["device"]["capabilities"] == ["approve", "deny", "freeze", "unfreeze", "topup"]
        async with Companion(tier1.new_wallet("two"), tier1.bridge.url) as second:
            with pytest.raises(CompanionError, match="unknown, used or expired"):
                await second.pair(pairing["pairing_id"], pairing["code"])
            # A second companion holding another main account cannot join this signer.
            with pytest.raises(CompanionError, match="main account"):
                await second.pair(**_ids(await begin(tier1)))
        listed = await tier1.stack.call(tier1.admin, "companion.list")
        assert listed["main_account"] == wallet.main_address.lower()
        assert [d["device_id"] for d in listed["devices"]] == [wallet.device_id]
        audit = await tier1.stack.call(tier1.admin, "audit.tail", {"n": 50, "kind": "companion.pair_refused"})
        reasons = " | ".join(e["body"]["reason"] for e in audit["entries"])
        for expected in (
            "wrong pairing code",
            "signature does not verify",
            "stale",
            "unknown, used",
            "main account",
        ):
            assert expected in reasons
        assert pairing["code"].replace("-", "") not in str(audit)  # the code is never logged
        await companion.close()

    asyncio.run(scenario())


def test_login_challenge_is_single_use_and_tokens_are_checked_on_every_use(tier1):
    async def scenario():
        companion = await tier1.paired()
        await companion.close()
        fresh = Companion(companion.wallet, tier1.bridge.url)
        token = await fresh.login()
        async with aiohttp.ClientSession() as http:
            base = tier1.bridge.url
            challenge = await (
                await http.post(base + "/v1/auth/challenge", json={"device_id": companion.wallet.device_id})
            ).json()
            from companion_bridge.wire import auth_message

            ts = time.time()
            sig = companion.wallet.device_sign(
                auth_message(companion.wallet.device_id, challenge["aud"], challenge["nonce"], ts)
            )
            body = {
                "device_id": companion.wallet.device_id,
                "nonce": challenge["nonce"],
                "ts": ts,
                "signature": sig,
            }
            assert (await http.post(base + "/v1/auth/token", json=body)).status == 200
            assert (await http.post(base + "/v1/auth/token", json=body)).status == 401  # replayed challenge
            for bad in (token[:-2] + "xx", "garbage", token.split(".")[0]):
                ws = await http.ws_connect(base.replace("http", "ws") + "/v1/ws")
                await ws.send_json({"type": "hello", "token": bad})
                msg = await ws.receive(timeout=5)
                assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
                assert ws.close_code == 4401
                await ws.close()
        await fresh.connect(token)
        assert fresh.state.get("frozen") is False
        await fresh.close()

    asyncio.run(scenario())


def _ids(pairing: dict) -> dict:
    return {"pairing_id": pairing["pairing_id"], "code": pairing["code"]}


# ---- tokens: pure, so property-tested ------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@settings(max_examples=200, deadline=None)
@given(ttl=st.floats(1, 3600), elapsed=st.floats(0, 7200), flip=st.integers(0, 200))
def test_tokens_expire_and_any_tampering_is_refused(ttl, elapsed, flip):
    clock = Clock()
    issuer = TokenIssuer("http://127.0.0.1:1", ttl, clock=clock)
    token, exp = issuer.issue("dev_" + "a" * 16)
    clock.now += elapsed
    claims = issuer.verify(token)
    assert (claims is not None) == (clock.now < exp)
    pos = flip % len(token)
    changed = token[:pos] + ("A" if token[pos] != "A" else "B") + token[pos + 1 :]
    tampered = issuer.verify(changed)
    assert tampered is None or tampered == claims  # base64 padding bits aside, nothing else verifies
    assert issuer.verify(token, scope="admin") is None
    other = TokenIssuer("http://127.0.0.1:2", ttl, clock=clock)
    assert other.verify(token) is None


@pytest.mark.chain
def test_the_bridge_speaks_tls_and_the_companion_verifies_it(tier1, tmp_path):
    import ssl

    from companion_bridge.server import BridgeOptions
    from tests.companion.conftest import BridgeThread, free_port

    cert, key = self_signed(tmp_path, "owlia-bridge-test", "bridge")
    base = tier1.bridge.options
    options = BridgeOptions(
        home=tmp_path / "tls-bridge",
        signer_socket=base.signer_socket,
        signer_token=base.signer_token,
        host="127.0.0.1",
        port=free_port(),
        tls_cert=cert,
        tls_key=key,
        poll_timeout=2.0,
    )
    bridge = BridgeThread(options).start()
    try:

        async def scenario():
            trusted = ssl.create_default_context(cafile=str(cert))
            url = f"https://127.0.0.1:{options.port}"
            async with Companion(tier1.new_wallet(), url) as stranger:
                with pytest.raises(aiohttp.ClientConnectorError):  # an unknown certificate is refused
                    await stranger.pair("pair_" + "0" * 16, "x")
            pairing = await begin(tier1)
            async with Companion(tier1.new_wallet("tls"), url, ssl=trusted) as companion:
                await companion.pair(pairing["pairing_id"], pairing["code"])
                await companion.connect()
                assert companion.state["frozen"] is False

        asyncio.run(scenario())
    finally:
        bridge.stop()


@pytest.mark.chain
def test_a_connection_ends_with_its_token(tier1, tmp_path):
    from tests.companion.conftest import start_bridge

    bridge = start_bridge(tier1.stack, tmp_path / "short", token_ttl_seconds=1.0)
    try:

        async def scenario():
            pairing = await begin(tier1)
            async with Companion(tier1.new_wallet(), bridge.url) as companion:
                await companion.pair(pairing["pairing_id"], pairing["code"])
                await companion.connect()
                await asyncio.wait_for(companion.closed.wait(), 5)
                assert companion.close_code == 4401
                await companion.connect()  # a fresh signed login opens a new one
                assert not companion.closed.is_set()

        asyncio.run(scenario())
    finally:
        bridge.stop()


def test_the_signer_spends_a_pairing_code_after_repeated_wrong_guesses_even_from_its_bridge(tier1):
    """A compromised bridge skips the bridge's own limits and talks to the signer with its token:
    the signer counts wrong codes itself, and after MAX_WRONG_CODES the right code no longer works."""
    from signer.tier1.devices import MAX_WRONG_CODES
    from signer.wire.protocol import Scope

    bridge_token = tier1.stack.client_token(f"rogue{time.monotonic_ns() % 10**9}", Scope.BRIDGE)
    wallet = tier1.new_wallet()

    def proof(pairing_id: str, code: str) -> dict:
        ts, nonce = time.time(), secrets.token_hex(32)
        body = pair_body(pairing_id, wallet.device_public_key, "phone", wallet.main_address, ts, nonce)
        message = signed_message(PAIR_DOMAIN, body)
        return {
            **body,
            "main_address": wallet.main_address,
            "signature": wallet.device_sign(message),
            "mac": pairing_mac(code, message),
        }

    async def scenario():
        pairing = await begin(tier1)
        for guess in range(MAX_WRONG_CODES):
            with pytest.raises(SignerError, match="wrong pairing code") as err:
                await tier1.stack.call(
                    bridge_token,
                    "companion.pair_complete",
                    proof(pairing["pairing_id"], f"AAAA-BBBB-CCCC-DDDD-EEEE-{guess:04d}"),
                )
        assert "this code is spent" in err.value.message
        with pytest.raises(SignerError, match="unknown, used or expired"):
            await tier1.stack.call(
                bridge_token, "companion.pair_complete", proof(pairing["pairing_id"], pairing["code"])
            )
        fresh = await begin(tier1)  # a new code from the owner still pairs
        done = await tier1.stack.call(
            bridge_token, "companion.pair_complete", proof(fresh["pairing_id"], fresh["code"])
        )
        assert done["device"]["name"] == "phone"

    asyncio.run(scenario())
