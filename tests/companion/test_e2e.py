"""End to end on anvil: escalate, deliver, approve with the main key, verify, broadcast, confirm."""

from __future__ import annotations

import asyncio
import time

import pytest

from companion_bridge.companion.client import Choice, unsigned
from companion_bridge.companion.render import render_request
from policies.kernel.addresses import to_checksum
from signer.wire.approval_request import request_hash
from signer.wire.client import SignerClient
from tests.companion.conftest import MAIN_PASS, request_for, transfer, wait_status
from tests.conftest import FRIEND, STRANGER, as_json, balance

pytestmark = [pytest.mark.chain]
OVER_LIMIT = 2 * 10**16  # 0.02 ETH: above the dev policy's 0.01 ETH per transaction


def test_over_limit_transfer_is_approved_on_the_companion_and_lands_on_chain(shared_tier1, anvil):
    tier1 = shared_tier1

    async def scenario():
        companion = await tier1.paired()
        bot = tier1.bot_token()
        before = balance(anvil, FRIEND)
        [pending] = await tier1.submit(transfer(FRIEND, OVER_LIMIT), token=bot, reason="paying back lunch")
        assert pending["status"] == "pending_approval"
        request = await request_for(companion, pending["request_id"])
        # What the user sees: the exact tx, checksummed, with the agent's words marked unverified.
        text = render_request(request)
        assert to_checksum(FRIEND) in text and "dev-friend" in text and "0.02 ETH" in text
        assert str(OVER_LIMIT) in text and "UNVERIFIED" in text and "paying back lunch" in text
        assert request["tx"]["from"] == companion.wallet.main_address
        assert request["escalation"]["rule_id"]

        result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
        assert result["status"] == "signed" and result["approved_by"] == companion.wallet.device_id
        status = await wait_status(tier1.stack, bot, pending["request_id"], {"confirmed"})
        assert status["tx_hash"] == result["tx_hash"] and status["status"] == "signed"
        assert balance(anvil, FRIEND) - before == OVER_LIMIT
        audit = await tier1.stack.call(tier1.admin, "audit.tail", {"n": 50})
        kinds = [e["kind"] for e in audit["entries"]]
        assert "approval.approved" in kinds and kinds.index("approval.approved") > kinds.index("sign.decided")
        await companion.close()

    asyncio.run(scenario())


def test_deny_reports_denied_with_reason_and_moves_nothing(shared_tier1, anvil):
    tier1 = shared_tier1

    async def scenario():
        companion = await tier1.paired()
        bot = tier1.bot_token()
        before = balance(anvil, STRANGER)
        [pending] = await tier1.submit(transfer(STRANGER, 1000), token=bot)
        request = await request_for(companion, pending["request_id"])
        result = await companion.answer(request, Choice("deny", note="not mine"))
        assert result["status"] == "denied"
        status = await tier1.stack.call(bot, "sign.status", {"request_id": pending["request_id"]})
        assert status["status"] == "denied" and "denied on your companion" in status["reason"]
        assert "not mine" in status["reason"]
        assert balance(anvil, STRANGER) == before
        await companion.close()

    asyncio.run(scenario())


def test_requests_queue_while_offline_and_the_backlog_arrives_on_reconnect(shared_tier1):
    tier1 = shared_tier1

    async def scenario():
        companion = await tier1.paired()
        await companion.close()
        ids = [p["request_id"] for p in await tier1.submit(*(transfer(STRANGER, i + 1) for i in range(3)))]
        deadline = time.monotonic() + 20
        while not all(  # delivered to the bridge's queue, nobody connected
            any(i in text for text in tier1.bridge.bridge.queue.backlog_json()) for i in ids
        ):
            assert time.monotonic() < deadline, "the requests never reached the bridge's queue"
            await asyncio.sleep(0.02)
        from companion_bridge.companion.client import Companion

        again = Companion(companion.wallet, tier1.bridge.url)
        await again.connect()
        got: list[str] = []
        while not set(ids) <= set(got):
            got.append((await again.next_request(timeout=5))["request_id"])
        assert [g for g in got if g in ids] == ids  # all of them, in order
        await again.close()

    asyncio.run(scenario())


def test_request_hash_is_recomputed_by_the_companion_not_taken_from_the_bridge(shared_tier1):
    tier1 = shared_tier1

    async def scenario():
        companion = await tier1.paired()
        [pending] = await tier1.submit(transfer(STRANGER, 5))
        request = await request_for(companion, pending["request_id"])
        answer = companion.build_answer(request, Choice("deny"))
        assert answer["request_hash"] == request_hash(unsigned(request))  # the signature rides outside it
        assert answer["request_hash"] == companion.verified_hash(request)  # and covers exactly that hash
        assert request["expires_at"] - time.time() > 250  # default five minutes
        await companion.close()

    asyncio.run(scenario())


def test_an_unfunded_main_account_refused_at_broadcast_stays_on_record_as_unconfirmed(tier1, anvil):
    from companion_bridge.companion.client import Companion
    from companion_bridge.companion.wallet import CompanionWallet

    async def scenario():
        wallet = CompanionWallet.create(tier1.root / "empty", bytearray(MAIN_PASS), scrypt_n=2**10)
        pairing = await tier1.stack.call(tier1.admin, "companion.pair_begin", {"name": "empty"})
        companion = Companion(wallet, tier1.bridge.url)
        await companion.pair(pairing["pairing_id"], pairing["code"], pairing["signer_key"])
        await companion.connect()
        bot = tier1.bot_token()
        [pending] = await tier1.submit(transfer(FRIEND, OVER_LIMIT), token=bot)
        request = await companion.next_request(timeout=5)
        assert request["tx"]["gas_limit"] == 21_000  # a plain transfer needs no simulation
        result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
        # the node's refusal is only its word: the transaction stays on record as possibly mined
        assert result["status"] == "signed" and "the node refused it" in result["broadcast_unknown"]
        status = await tier1.stack.call(bot, "sign.status", {"request_id": pending["request_id"]})
        assert status["state"] == "unconfirmed" and status["broadcast_unknown"] == result["broadcast_unknown"]
        await companion.close()

    asyncio.run(scenario())


def test_without_a_paired_companion_a_request_can_only_be_denied(tier1):
    async def scenario():
        [pending] = await tier1.submit(transfer(FRIEND, OVER_LIMIT))
        companion = await tier1.paired()  # paired after the escalation: no main account was known then
        request = await companion.next_request(timeout=5)
        assert request["request_id"] == pending["request_id"] and request["tx"] is None
        assert "can only be denied" in render_request(request)
        from companion_bridge.companion.client import CompanionError

        with pytest.raises(CompanionError, match="no transaction"):
            companion.build_answer(request, Choice("approve", bytearray(MAIN_PASS)))
        assert (await companion.answer(request, Choice("deny")))["status"] == "denied"
        await companion.close()

    asyncio.run(scenario())


def test_the_queue_survives_a_bridge_restart(shared_tier1):
    tier1 = shared_tier1
    from companion_bridge.companion.client import Companion
    from tests.companion.conftest import BridgeThread

    async def scenario():
        companion = await tier1.paired()
        await companion.close()
        [pending] = await tier1.submit(transfer(STRANGER, 9))
        for _ in range(100):
            if any(pending["request_id"] in text for text in tier1.bridge.bridge.queue.backlog_json()):
                break
            await asyncio.sleep(0.05)
        await asyncio.to_thread(tier1.bridge.stop)
        tier1.bridge = await asyncio.to_thread(lambda: BridgeThread(tier1.bridge.options).start())
        again = Companion(companion.wallet, tier1.bridge.url)
        await again.connect()
        request = await request_for(again, pending["request_id"])
        assert (await again.answer(request, Choice("deny")))["status"] == "denied"
        await again.close()

    asyncio.run(scenario())


def test_escalation_reaches_a_connected_companion_fast(shared_tier1):
    tier1 = shared_tier1
    """Regression guard for the push path (long-poll wake-up, no polling interval); the benchmark
    (bench/bridge_bench.py) measures ~10-30 ms p50 on loopback, the bound leaves CI headroom."""

    async def scenario():
        companion = await tier1.paired()
        samples = []
        for i in range(15):  # a client of its own each time: one may keep only ten requests waiting
            async with SignerClient(tier1.stack.socket, tier1.bot_token()) as client:
                t0 = time.perf_counter()
                pending = as_json(await client.sign(transfer(STRANGER, i + 1)))
                await request_for(companion, pending["request_id"])
                samples.append(time.perf_counter() - t0)
        await companion.close()
        assert sorted(samples)[len(samples) // 2] < 0.25, samples

    asyncio.run(scenario())


def test_two_requests_escalated_at_the_same_nonce_are_both_approved_in_turn(shared_tier1, anvil):
    """Both were quoted the main account's nonce n. The companion asks the signer for the next
    nonce as it signs, so the second approval goes out at n + 1 instead of failing at broadcast;
    an answer still signed at the spent nonce (by a second device holding the same main key: this
    companion, having journaled an approval of b at n, would only ever sign b at n again) is
    refused with the nonce to use, not broadcast."""
    tier1 = shared_tier1

    async def scenario():
        companion = await tier1.paired()
        other = await tier1.paired("laptop")
        bot = tier1.bot_token()
        before = balance(anvil, FRIEND)
        first, second = await tier1.submit(*(transfer(FRIEND, OVER_LIMIT + i) for i in (1, 2)), token=bot)
        a = await request_for(companion, first["request_id"])
        b = await request_for(companion, second["request_id"])
        assert a["tx"]["nonce"] == b["tx"]["nonce"]
        stale = other.build_answer(b, Choice("approve", bytearray(MAIN_PASS)))  # signed at nonce n
        done_a = await companion.answer(a, Choice("approve", bytearray(MAIN_PASS)))
        assert done_a["nonce"] == a["tx"]["nonce"]
        with pytest.raises(Exception, match=f"next nonce is {a['tx']['nonce'] + 1}"):
            await other.call("approvals.answer", stale)
        done_b = await companion.answer(b, Choice("approve", bytearray(MAIN_PASS)))
        assert done_b["status"] == "signed" and done_b["nonce"] == a["tx"]["nonce"] + 1
        for pending in (first, second):
            await wait_status(tier1.stack, bot, pending["request_id"], {"confirmed"})
        assert balance(anvil, FRIEND) - before == 2 * OVER_LIMIT + 3
        await other.close()
        await companion.close()

    asyncio.run(scenario())
