"""The kill switch from the companion, and session-key top-ups as Tier 1 transfers."""

from __future__ import annotations

import asyncio

import pytest

from companion_bridge.companion.client import Choice, Companion, CompanionError
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from signer.wire.replies import ApprovalsStateReply, SignerState
from tests.companion.conftest import MAIN_PASS, Tier1, transfer
from tests.conftest import FRIEND, as_json, balance

pytestmark = [pytest.mark.chain]
SMALL = 10**15  # 0.001 ETH: Tier 2, auto-signed by the session key


async def tier2(tier1: Tier1, token: str) -> dict:
    return (await tier1.submit(transfer(FRIEND, SMALL), token=token))[0]


def test_freeze_stops_tier2_at_the_next_request_and_only_the_companion_unfreezes(tier1):
    stack = tier1.stack
    stack.funded_session_key()
    bot = stack.client_token("bot")

    async def scenario():
        companion = await tier1.paired()
        assert (await tier2(tier1, bot))["status"] == "signed"
        state = await companion.freeze()
        assert state["frozen"] is True and state["freeze_id"].startswith("frz_")
        denied = await tier2(tier1, bot)  # the very next request
        assert denied["status"] == "denied" and denied["rule_id"] in (
            "signer.frozen",
            "session_key.unavailable",
        )
        keys = (await stack.call(tier1.admin, "session_key.list"))["session_keys"]
        assert keys and all(k["status"] == "revoked" for k in keys)

        # A replayed freeze proof, an unfreeze naming another freeze, a forged one: all refused.
        with pytest.raises(CompanionError, match="stale|already used|another freeze|not verify"):
            await companion.call(
                "approvals.freeze",
                {
                    "device_id": companion.wallet.device_id,
                    "action": "unfreeze",
                    "freeze_id": "frz_" + "0" * 16,
                    "ts": 1.0,
                    "signature": "00" * 64,
                },
            )
        companion.state["freeze_id"] = "frz_" + "1" * 16
        with pytest.raises(CompanionError, match="another freeze"):
            await companion.freeze("unfreeze")
        assert (await stack.call(tier1.admin, "status"))["frozen"] is True

        # Durable: a restart keeps the signer frozen.
        await companion.close()
        await asyncio.to_thread(stack.stop)
        await asyncio.to_thread(stack.start)
        assert (await stack.call(tier1.admin, "status"))["frozen"] is True
        assert (await tier2(tier1, bot))["status"] == "denied"

        companion = Companion(companion.wallet, tier1.bridge.url)
        await companion.connect()
        companion.state = {}
        state = await companion.freeze("unfreeze")
        assert state["frozen"] is False
        await asyncio.to_thread(
            stack.funded_session_key
        )  # the old keys stay revoked: new ones are made deliberately
        assert (await tier2(tier1, bot))["status"] == "signed"
        audit = await stack.call(tier1.admin, "audit.tail", {"n": 200})
        kinds = [e["kind"] for e in audit["entries"]]
        assert "signer.frozen" in kinds and "signer.unfrozen" in kinds and "freeze.refused" in kinds
        await companion.close()

    asyncio.run(scenario())


def test_an_unfreeze_and_a_new_freeze_delivered_together_leave_the_signer_frozen(tier1):
    """A hostile bridge holds the user's unfreeze back and sends it with their next freeze."""
    import time

    from signer.wire.messages import FREEZE_DOMAIN, freeze_body, signed_message
    from signer.wire.protocol import Scope

    stack = tier1.stack
    stack.funded_session_key()

    async def scenario():
        companion = await tier1.paired()
        wallet, device = companion.wallet, companion.wallet.device_id

        def proof(action: str, freeze_id: str) -> dict:
            ts = time.time()
            return {
                "device_id": device,
                "action": action,
                "freeze_id": freeze_id,
                "ts": ts,
                "signature": wallet.device_sign(
                    signed_message(FREEZE_DOMAIN, freeze_body(device, action, freeze_id, ts))
                ),
            }

        bridge = stack.client_token("rogue-bridge", Scope.BRIDGE)
        async with SignerClient(stack.socket, bridge) as one, SignerClient(stack.socket, bridge) as two:
            first = (await one.call_as(SignerState, "approvals.freeze", proof("freeze", ""))).freeze_id
            assert first
            await asyncio.gather(
                one.call("approvals.freeze", proof("unfreeze", first)),
                two.call("approvals.freeze", proof("freeze", "")),
                return_exceptions=True,
            )
            state = await one.call_as(ApprovalsStateReply, "approvals.state")
        assert state.frozen is True and state.freeze_id not in ("", first)
        assert (await stack.call(tier1.admin, "status"))["frozen"] is True  # memory agrees with disk
        await asyncio.to_thread(stack.funded_session_key)  # even a brand-new key signs nothing
        assert (await tier2(tier1, stack.client_token("bot")))["status"] == "denied"
        await companion.close()

    asyncio.run(scenario())


def test_deny_and_freeze_from_a_request(tier1):
    stack = tier1.stack
    stack.funded_session_key()
    bot = stack.client_token("bot")

    async def scenario():
        companion = await tier1.paired()
        async with SignerClient(stack.socket, bot) as client:
            pending = as_json(await client.sign({"chain_id": 31337, "to": FRIEND, "value": str(2 * 10**16)}))
        request = await companion.next_request(timeout=5)
        result = await companion.answer(request, Choice("freeze"))
        assert result["status"] == "denied" and result["rule_id"] == "companion.denied_and_frozen"
        status = await stack.call(bot, "sign.status", {"request_id": pending["request_id"]})
        assert status["status"] == "denied"
        assert (await tier2(tier1, bot))["status"] == "denied"
        assert (await stack.call(tier1.admin, "status"))["frozen"] is True
        await companion.close()

    asyncio.run(scenario())


def test_topup_is_a_tier1_transfer_up_to_the_cap(tier1, anvil):
    stack = tier1.stack
    admin = tier1.admin
    key = stack.call_sync(
        admin,
        "session_key.create",
        {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337, "balance_cap": str(10**16)},
    )["session_key"]

    async def scenario():
        companion = await tier1.paired()
        with pytest.raises(CompanionError, match=r"can be at most 0\.01 ETH \(its cap is 0\.01 ETH"):
            await companion.topup(key["key_id"], 10**16 + 1)
        pending = await companion.topup(key["key_id"], 4 * 10**15)
        assert pending["status"] == "pending_approval"
        request = await companion.next_request(timeout=5)
        assert request["kind"] == "topup" and request["tx"]["value"] == str(4 * 10**15)
        assert request["tx"]["to"].lower() == key["address"]
        before = balance(anvil, key["address"])
        result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
        assert result["status"] == "signed"
        for _ in range(100):
            if balance(anvil, key["address"]) != before:
                break
            await asyncio.sleep(0.05)
        assert balance(anvil, key["address"]) - before == 4 * 10**15
        await companion.close()

    asyncio.run(scenario())


def test_the_kill_switch_works_when_the_bridge_is_down(tier1, tmp_path):
    """The user panics and the bridge is unreachable: `owlia companion freeze` says so with the way out
    (no traceback), and `owlia signer freeze` on the signer's host freezes at once; only a paired
    device can lift it, and a bot token cannot freeze."""
    import subprocess
    import sys

    from bot.devchain import free_port

    stack = tier1.stack
    stack.funded_session_key()
    bot = stack.client_token("bot")

    async def pair() -> Companion:
        return await tier1.paired()

    companion = asyncio.run(pair())
    wallet_dir = companion.wallet.home
    asyncio.run(companion.close())
    dead_bridge = f"http://127.0.0.1:{free_port()}"
    env = {"OWLIA_HOME": str(stack.home), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "companion",
            "freeze",
            "--dir",
            str(wallet_dir),
            "--bridge",
            dead_bridge,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "could not reach the bridge" in out.stderr and "owlia signer freeze" in out.stderr

    async def bot_cannot_freeze() -> None:
        async with SignerClient(stack.socket, bot) as client:
            with pytest.raises(Exception, match="scope|not allowed|permission|forbidden"):
                await client.call("signer.freeze")

    asyncio.run(bot_cannot_freeze())
    host = stack.owlia("signer", "freeze")
    assert host.returncode == 0, host.stderr
    assert (asyncio.run(stack.call(tier1.admin, "status")))["frozen"] is True
    assert asyncio.run(tier2(tier1, bot))["status"] == "denied"
    audit = asyncio.run(stack.call(tier1.admin, "audit.tail", {"n": 50}))
    frozen = [e for e in audit["entries"] if e["kind"] == "signer.frozen"]
    assert frozen and frozen[-1]["body"]["by_device"].startswith("host:")
