"""From chat: "swap 0.005 ETH to TUSD" inside the Tier 2 limits is signed and the tokens land in the
session key's account; a token sold is approved for exactly the amount first; wrap and unwrap."""

from __future__ import annotations

import pytest

from bot.devchain import rpc
from tests.bot.agent.conftest import attach_bot, call
from tests.conftest import wait_receipt
from tests.defi.conftest import quote, swap_policy, token_balance
from tests.fakes.llm_server import FakeLLMServer, Reply

pytestmark = [pytest.mark.chain, pytest.mark.slow]


def _tx_hashes(out: str) -> list[str]:
    return [
        w.strip(".,;()")
        for w in out.replace("\n", " ").split()
        if w.startswith("0x") and len(w.strip(".,;()")) == 66
    ]


def test_swap_from_chat_lands_in_the_session_key(make_stack, chain, market, tmp_path):
    stack = make_stack(chain.url, policy=swap_policy(market, tmp_path)).start()
    payer = stack.funded_session_key()["address"].lower()
    tusd = market["tokens"][0]["address"]
    before = token_balance(chain.url, tusd, payer)
    expected = quote(chain.url, market, market["weth"], tusd, 5 * 10**15)
    with FakeLLMServer() as server:
        bot = attach_bot(stack, server)
        server.enqueue(
            Reply(tool_calls=[call("swap", {"amount": "0.005", "token_in": "ETH", "token_out": "TUSD"})]),
            Reply(text=["Swapped."]),
        )
        out = bot.chat("swap 0.005 ETH to TUSD")
        assert "Signed and sent" in out, out
        (tx_hash,) = {h for h in _tx_hashes(bot.chat("/details"))}  # the chat shows it short
        assert wait_receipt(chain, tx_hash)["status"] == "0x1"
        got = token_balance(chain.url, tusd, payer) - before
        assert got >= expected - expected // 200, (got, expected)

        # Selling the TUSD back to ETH: an approval of exactly the amount, then the swap with an unwrap.
        eth_before = int(rpc(chain.url, "eth_getBalance", [payer, "latest"]), 16)
        server.enqueue(
            Reply(tool_calls=[call("swap", {"amount": "10", "token_in": "TUSD", "token_out": "ETH"})]),
            Reply(text=["Sold."]),
        )
        out = bot.chat("sell 10 TUSD for ETH")
        assert "Signed and sent" in out, out
        router_allowance = rpc(
            chain.url,
            "eth_call",
            [
                {"to": tusd, "data": "0xdd62ed3e" + "00" * 12 + payer[2:] + "00" * 12 + market["router"][2:]},
                "latest",
            ],
        )
        assert int(router_allowance, 16) == 0  # exactly the amount was approved, and the swap used it all
        (tx_hash,) = {h for h in _tx_hashes(bot.chat("/details"))}  # the chat shows it short
        receipt = wait_receipt(chain, tx_hash)
        assert receipt["status"] == "0x1"
        gas = int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
        assert int(rpc(chain.url, "eth_getBalance", [payer, "latest"]), 16) + gas > eth_before

        weth_before = token_balance(chain.url, market["weth"], payer)
        server.enqueue(Reply(tool_calls=[call("wrap", {"amount": "0.002"})]), Reply(text=["Wrapped."]))
        out = bot.chat("wrap 0.002 ETH")
        assert "Signed and sent" in out, out
        wait_receipt(chain, _tx_hashes(bot.chat("/details"))[0])
        assert token_balance(chain.url, market["weth"], payer) - weth_before == 2 * 10**15


def test_swap_over_the_limit_from_chat_waits_for_the_companion(make_stack, chain, market, tmp_path):
    stack = make_stack(chain.url, policy=swap_policy(market, tmp_path)).start()
    payer = stack.funded_session_key()["address"].lower()
    tusd = market["tokens"][0]["address"]
    before = token_balance(chain.url, tusd, payer)
    with FakeLLMServer() as server:
        bot = attach_bot(stack, server)
        server.enqueue(
            Reply(tool_calls=[call("swap", {"amount": "0.02", "token_out": "TUSD"})]),
            Reply(text=["Waiting for you."]),
        )
        out = bot.chat("swap 0.02 ETH to TUSD")
        assert "Signed and sent" not in out and "0.01 ETH" in out, out
    assert token_balance(chain.url, tusd, payer) == before


def test_portfolio_lists_every_policy_asset_of_the_session_key_with_dollars(
    make_stack, chain, market, tmp_path
):
    stack = make_stack(chain.url, policy=swap_policy(market, tmp_path)).start()
    payer = stack.funded_session_key()["address"].lower()
    tusd = market["tokens"][0]["address"]
    sender = rpc(chain.url, "eth_accounts")[0]
    data = "0xa9059cbb" + "00" * 12 + payer[2:] + (15 * 10**18).to_bytes(32, "big").hex()
    # the deployer holds the rest of the TUSD supply: give the key 15 TUSD
    wait_receipt(chain, rpc(chain.url, "eth_sendTransaction", [{"from": sender, "to": tusd, "data": data}]))
    with FakeLLMServer() as server:
        bot = attach_bot(stack, server)
        server.enqueue(Reply(tool_calls=[call("portfolio", {})]), Reply(text=["Here it is."]))
        bot.chat("what do I hold?")
        result = next(
            p
            for m in server.requests[-1].body["messages"]
            for p in (m["content"] if isinstance(m["content"], list) else [])
            if p.get("type") == "tool_result"
        )
    text = str(result["content"])
    assert (
        f"({stack.call_sync(stack.admin_token, 'session_key.list')['session_keys'][0]['key_id']})" in text
    ), text
    assert "15 TUSD ($15.00)" in text, text
    assert "ETH ($" in text and "Total: $" in text, text
