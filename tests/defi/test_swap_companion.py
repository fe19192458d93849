"""A swap over the Tier 2 limit: the companion is asked, its request shows the balance changes the
node simulated for the main account that will sign, and once approved on the companion it lands."""

from __future__ import annotations

import asyncio

import pytest

from companion_bridge.companion.client import Choice
from companion_bridge.companion.render import render_request
from tests.companion.conftest import MAIN_PASS, own_tier1, request_for, wait_status
from tests.defi.conftest import MILLI, quote, swap_data, swap_policy, token_balance

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def test_a_swap_over_the_limit_is_approved_on_the_companion_and_lands(make_stack, chain, market, tmp_path):
    tusd = market["tokens"][0]["address"]
    amount = 11 * MILLI  # over the 0.01 ETH per transaction
    with own_tier1(
        make_stack, tmp_path, chain, rpc_url=chain.url, policy=swap_policy(market, tmp_path)
    ) as tier1:
        payer = tier1.stack.funded_session_key()["address"].lower()

        async def scenario() -> None:
            companion = await tier1.paired()
            main = companion.wallet.main_address.lower()
            bot = tier1.bot_token()
            q = quote(chain.url, market, market["weth"], tusd, amount)
            minimum = q - q // 200
            intent = {
                "chain_id": 31337,
                "to": market["router"],
                "value": str(amount),
                "data": "0x" + swap_data(market["weth"], tusd, payer, amount, minimum).hex(),
            }
            [pending] = await tier1.submit(intent, token=bot, reason="buy some TUSD")
            assert pending["status"] == "pending_approval" and pending["rule_id"] == "limit.per_tx", pending
            request = await request_for(companion, pending["request_id"])
            changes = {(c["account"], c["asset"]): c for c in request["simulation"]["changes"]}
            assert changes[(main, "native")]["delta"] == str(-amount)  # the main account pays
            assert changes[(main, "native")]["symbol"] == "ETH"
            assert int(changes[(payer, tusd)]["delta"]) >= minimum  # the session key receives
            text = render_request(request)
            assert "Balance changes simulated by the node" in text and "TUSD" in text and "SWAP" in text, text

            before = token_balance(chain.url, tusd, payer)
            result = await companion.answer(request, Choice("approve", bytearray(MAIN_PASS)))
            assert result["status"] == "signed", result
            await wait_status(tier1.stack, bot, pending["request_id"], {"confirmed"})
            assert token_balance(chain.url, tusd, payer) - before >= minimum
            await companion.close()

        asyncio.run(scenario())
