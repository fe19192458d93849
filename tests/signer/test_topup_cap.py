"""Top-ups never take a session key past its balance cap, however they race.

Real signer process, real bridge and companion, anvil with automining switched off where a top-up
has to be sent but not mined yet (on mainnet that gap is about 12 s). Before the fix the room was
read from the "latest" balance only: two approved top-ups funded the key to twice its cap, and three
concurrent dev top-ups to three times.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from bot.devchain import rpc
from companion_bridge.companion.client import Choice, CompanionError
from policies.units import format_amount
from signer.wire.exchange import new_idempotency_key
from tests.companion import conftest as tier1_fixtures
from tests.companion.conftest import MAIN_PASS
from tests.conftest import balance

pytestmark = pytest.mark.chain
CAP = 10**16
tier1 = tier1_fixtures.tier1  # a fresh signer process and bridge per test


def new_key(stack, cap: int = CAP) -> dict:
    return stack.call_sync(
        stack.admin_token,
        "session_key.create",
        {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337, "balance_cap": str(cap)},
    )["session_key"]


async def settle(anvil, address: str, expected: int) -> int:
    for _ in range(100):
        if balance(anvil, address) == expected:
            break
        await asyncio.sleep(0.05)
    return balance(anvil, address)


def test_a_key_has_one_top_up_waiting_at_a_time(tier1, anvil):
    key = new_key(tier1.stack)

    async def scenario():
        companion = await tier1.paired()
        try:
            first = await companion.topup(key["key_id"], CAP)
            with pytest.raises(CompanionError, match="already waiting for an answer"):
                await companion.topup(key["key_id"], CAP)
            request = await companion.next_request(timeout=5)
            assert request["request_id"] == first["request_id"]
            assert (await companion.answer(request, Choice("approve", bytearray(MAIN_PASS))))[
                "status"
            ] == "signed"
            assert await settle(anvil, key["address"], CAP) == CAP
            with pytest.raises(
                CompanionError, match="already holds or has coming its whole cap of "
            ):  # answered: the cap is what stops it now
                await companion.topup(key["key_id"], 1)
        finally:
            await companion.close()

    asyncio.run(scenario())


def test_a_top_up_sent_but_not_mined_counts_against_the_room_even_across_a_restart(tier1, anvil):
    stack = tier1.stack
    key = new_key(stack)

    async def approve(companion, amount: int) -> None:
        pending = await companion.topup(key["key_id"], amount)
        request = await companion.next_request(timeout=5)
        assert request["request_id"] == pending["request_id"]
        assert (await companion.answer(request, Choice("approve", bytearray(MAIN_PASS))))[
            "status"
        ] == "signed"

    async def scenario():
        companion = await tier1.paired()  # funds its main account: before automining is switched off
        rpc(anvil.url, "evm_setAutomine", [False])
        try:
            await approve(companion, CAP // 2)  # in the node's pool, not in a block
            assert balance(anvil, key["address"]) == 0
            await asyncio.to_thread(stack.stop)
            await asyncio.to_thread(stack.start)
            half = format_amount(CAP // 2, 18, "ETH")
            with pytest.raises(CompanionError, match=f"can be at most {re.escape(half)} \\(its cap is "):
                await companion.topup(key["key_id"], CAP)  # before the fix: the whole cap again
            await approve(companion, CAP // 2)
            with pytest.raises(CompanionError, match="already holds or has coming its whole cap of "):
                await companion.topup(key["key_id"], 1)  # said in ETH, never "1..0 wei"
        finally:
            rpc(anvil.url, "evm_setAutomine", [True])
            rpc(anvil.url, "evm_mine", [])
            await companion.close()
        return await settle(anvil, key["address"], CAP)

    assert asyncio.run(scenario()) == CAP


def test_concurrent_dev_top_ups_fund_a_key_to_its_cap_once(stack, anvil):
    key = new_key(stack)

    async def topups():
        return await asyncio.gather(
            *(
                stack.call(
                    stack.admin_token,
                    "session_key.topup",
                    {"idempotency_key": new_idempotency_key("t"), "key_id": key["key_id"]},
                )
                for _ in range(3)
            )
        )

    results = asyncio.run(topups())
    assert sum(int(r["amount"]) for r in results) == CAP  # the first funds the room, the others find none
    assert balance(anvil, key["address"]) == CAP  # before the fix: 3 x the cap
