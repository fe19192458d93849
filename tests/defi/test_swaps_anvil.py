"""Swaps on a real Uniswap v3 market on anvil, decided by a real signer process.

Inside the limits a swap is signed with the session key and its output lands in that key's account;
every attack below is denied or escalated before anything is broadcast (the session key's nonce
does not move), or, for the sandwich, bounded on chain by the minimum the signer enforced.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import yaml

from bot.devchain import rpc
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from tests.conftest import STRANGER, as_json, wait_receipt
from tests.defi.conftest import (
    MILLI,
    fake_token_with_pool,
    lookalike_router,
    multicall_data,
    nonce,
    quote,
    swap_data,
    swap_policy,
    token_balance,
)
from tests.signer.lying_node import LyingNode

pytestmark = [pytest.mark.chain, pytest.mark.slow]
AMOUNT = 5 * MILLI  # 0.005 ETH, inside the dev policy's 0.01 ETH per transaction


def sign(stack, token: str, intent: dict) -> dict:
    async def go() -> dict:
        async with SignerClient(stack.socket, token) as client:
            return as_json(await client.sign(intent, idempotency_key=new_idempotency_key("swap")))

    return asyncio.run(go())


def swap_intent(market: dict, data: bytes, value: int = AMOUNT, to: str | None = None) -> dict:
    return {"chain_id": 31337, "to": to or market["router"], "value": str(value), "data": "0x" + data.hex()}


def findings(reply: dict) -> set[str]:
    return {f["rule_id"] for f in reply["decision"]["findings"] if f["outcome"] != "allow"}


@pytest.fixture()
def swapper(make_stack, chain, market, tmp_path):
    """(stack, client token, session key address) with a policy that lists the market."""
    stack = make_stack(chain.url, policy=swap_policy(market, tmp_path)).start()
    key = stack.funded_session_key()
    return stack, stack.client_token("bot"), key["address"].lower()


def honest_min(chain, market, token_out: str, amount: int = AMOUNT, keep_bps: int = 50) -> int:
    q = quote(chain.url, market, market["weth"], token_out, amount)
    return q - q * keep_bps // 10_000


def test_eth_to_token_inside_the_limits_is_signed_and_lands_in_the_session_key(swapper, chain, market):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    before = token_balance(chain.url, tusd, payer)
    minimum = honest_min(chain, market, tusd)
    reply = sign(stack, token, swap_intent(market, swap_data(market["weth"], tusd, payer, AMOUNT, minimum)))
    assert reply["status"] == "signed", reply
    assert "swap.checked" in {f["rule_id"] for f in reply["decision"]["findings"]}
    assert "simulation.matches" in {f["rule_id"] for f in reply["decision"]["findings"]}
    assert wait_receipt(chain, reply["tx_hash"])["status"] == "0x1"
    got = token_balance(chain.url, tusd, payer) - before
    assert got >= minimum and got > 14 * 10**18  # about 15 TUSD for 0.005 ETH at $3000


def test_wrap_and_unwrap_stay_in_the_account(swapper, chain, market):
    stack, token, payer = swapper
    weth = market["weth"]
    before = token_balance(chain.url, weth, payer)
    wrap = sign(stack, token, {"chain_id": 31337, "to": weth, "value": str(2 * MILLI), "data": "0xd0e30db0"})
    assert wrap["status"] == "signed", wrap
    assert wait_receipt(chain, wrap["tx_hash"])["status"] == "0x1"
    assert token_balance(chain.url, weth, payer) - before == 2 * MILLI
    unwrap = sign(
        stack,
        token,
        {
            "chain_id": 31337,
            "to": weth,
            "value": "0",
            "data": "0x2e1a7d4d" + (MILLI).to_bytes(32, "big").hex(),
        },
    )
    assert unwrap["status"] == "signed", unwrap
    assert wait_receipt(chain, unwrap["tx_hash"])["status"] == "0x1"
    assert token_balance(chain.url, weth, payer) - before == MILLI


def _refused_before_broadcast(chain, payer: str, reply: dict, rule: str, outcome: str = "denied") -> None:
    assert reply["status"] == outcome, reply
    assert rule in findings(reply), (rule, findings(reply))


def test_output_to_another_address_is_denied(swapper, chain, market):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    sent = nonce(chain.url, payer)
    reply = sign(
        stack,
        token,
        swap_intent(
            market, swap_data(market["weth"], tusd, STRANGER.lower(), AMOUNT, honest_min(chain, market, tusd))
        ),
    )
    _refused_before_broadcast(chain, payer, reply, "swap.recipient")
    assert nonce(chain.url, payer) == sent


def test_a_token_named_like_a_listed_one_at_another_address_is_denied(swapper, chain, market):
    stack, token, payer = swapper
    fake = fake_token_with_pool(chain.url, market)  # the attacker's "TUSD"
    sent = nonce(chain.url, payer)
    reply = sign(
        stack,
        token,
        swap_intent(market, swap_data(market["weth"], fake, payer, AMOUNT, honest_min(chain, market, fake))),
    )
    _refused_before_broadcast(chain, payer, reply, "swap.token_out_not_listed")
    assert nonce(chain.url, payer) == sent


@pytest.mark.parametrize("minimum", ["zero", "below"])
def test_a_minimum_of_zero_or_below_the_bound_is_denied(swapper, chain, market, minimum):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    low = (
        0 if minimum == "zero" else honest_min(chain, market, tusd, keep_bps=150)
    )  # 1.5 % off, the bound is 1 %
    sent = nonce(chain.url, payer)
    reply = sign(stack, token, swap_intent(market, swap_data(market["weth"], tusd, payer, AMOUNT, low)))
    _refused_before_broadcast(chain, payer, reply, "swap.min_out")
    assert nonce(chain.url, payer) == sent


def test_a_deadline_that_is_missing_or_far_is_denied(swapper, chain, market):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    for deadline in (2**256 - 1, int(time.time()) + 7200, 0):
        reply = sign(
            stack,
            token,
            swap_intent(
                market,
                swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd), deadline),
            ),
        )
        _refused_before_broadcast(chain, payer, reply, "swap.deadline")


def test_a_router_lookalike_is_denied(swapper, chain, market):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    twin = lookalike_router(chain.url, market)
    sent = nonce(chain.url, payer)
    reply = sign(
        stack,
        token,
        swap_intent(
            market, swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd)), to=twin
        ),
    )
    _refused_before_broadcast(chain, payer, reply, "swap.router_lookalike")
    assert nonce(chain.url, payer) == sent


def test_a_multicall_that_adds_a_sweep_to_another_address_is_denied(swapper, chain, market):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    swap = swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd))
    sweep = (
        bytes.fromhex("df2ab5bb")
        + bytes(12)
        + bytes.fromhex(tusd[2:])
        + bytes(32)
        + bytes(12)
        + bytes.fromhex(STRANGER[2:])
    )
    reply = sign(stack, token, swap_intent(market, multicall_data(swap, sweep)))
    _refused_before_broadcast(chain, payer, reply, "swap.payout_recipient")
    # The same multicall with the swap alone is signed: multicall itself is fine, the sweep is not.
    alone = sign(stack, token, swap_intent(market, multicall_data(swap)))
    assert alone["status"] == "signed", alone


def test_an_unlimited_approval_to_the_router_is_denied_and_one_swap_worth_is_signed(swapper, chain, market):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]

    def approve(amount: int) -> dict:
        data = "0x095ea7b3" + "00" * 12 + market["router"][2:] + amount.to_bytes(32, "big").hex()
        return sign(stack, token, {"chain_id": 31337, "to": tusd, "value": "0", "data": data})

    _refused_before_broadcast(chain, payer, approve(2**256 - 1), "approval.unlimited")
    assert "approval.router_above_swap" in findings(approve(51 * 10**18))  # above TUSD's 50 per transaction
    assert approve(10 * 10**18)["status"] == "signed"
    # ...and it rides along nowhere: inside the router's multicall it is still an unlimited approval
    ride = "095ea7b3" + "00" * 12 + STRANGER[2:].lower() + "ff" * 32
    swap = swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd))
    reply = sign(stack, token, swap_intent(market, multicall_data(swap, bytes.fromhex(ride))))
    _refused_before_broadcast(chain, payer, reply, "approval.unlimited")


def test_token_in_swap_counts_the_token_and_lands(swapper, chain, market):
    """TUSD -> WETH after a router approval of exactly the amount: the router pulls it from the key."""
    stack, token, payer = swapper
    tusd, towl = market["tokens"][0]["address"], market["weth"]
    first = sign(
        stack,
        token,
        swap_intent(market, swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd))),
    )
    assert wait_receipt(chain, first["tx_hash"])["status"] == "0x1"
    amount = 10 * 10**18
    data = "0x095ea7b3" + "00" * 12 + market["router"][2:] + amount.to_bytes(32, "big").hex()
    approved = sign(stack, token, {"chain_id": 31337, "to": tusd, "value": "0", "data": data})
    assert wait_receipt(chain, approved["tx_hash"])["status"] == "0x1"
    q = quote(chain.url, market, tusd, towl, amount)
    before = token_balance(chain.url, towl, payer)
    reply = sign(
        stack, token, swap_intent(market, swap_data(tusd, towl, payer, amount, q - q // 200), value=0)
    )
    assert reply["status"] == "signed", reply
    assert wait_receipt(chain, reply["tx_hash"])["status"] == "0x1"
    assert token_balance(chain.url, towl, payer) - before >= q - q // 200
    assert "swap.checked" in {f["rule_id"] for f in reply["decision"]["findings"]}


def test_token_to_eth_through_unwrap_lands_as_eth_in_the_session_key(swapper, chain, market):
    """multicall[exactInputSingle(recipient = router), unwrapWETH9(minimum, payer)]: ETH out."""
    stack, token, payer = swapper
    tusd, weth = market["tokens"][0]["address"], market["weth"]
    bought = sign(
        stack,
        token,
        swap_intent(market, swap_data(weth, tusd, payer, AMOUNT, honest_min(chain, market, tusd))),
    )
    assert wait_receipt(chain, bought["tx_hash"])["status"] == "0x1"
    amount = 6 * 10**18
    data = "0x095ea7b3" + "00" * 12 + market["router"][2:] + amount.to_bytes(32, "big").hex()
    assert (
        wait_receipt(
            chain, sign(stack, token, {"chain_id": 31337, "to": tusd, "value": "0", "data": data})["tx_hash"]
        )["status"]
        == "0x1"
    )
    q = quote(chain.url, market, tusd, weth, amount)
    minimum = q - q // 200
    unwrap = bytes.fromhex("49404b7c") + minimum.to_bytes(32, "big") + bytes(12) + bytes.fromhex(payer[2:])
    eth_before = int(rpc(chain.url, "eth_getBalance", [payer, "latest"]), 16)
    reply = sign(
        stack,
        token,
        swap_intent(
            market, multicall_data(swap_data(tusd, weth, market["router"], amount, minimum), unwrap), value=0
        ),
    )
    assert reply["status"] == "signed", reply
    receipt = wait_receipt(chain, reply["tx_hash"])
    assert receipt["status"] == "0x1"
    gas = int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
    assert int(rpc(chain.url, "eth_getBalance", [payer, "latest"]), 16) - eth_before + gas >= minimum


def _with_node(make_stack, chain, market, tmp_path, *, main: str, check: str | None):
    stack = make_stack(chain.url, policy=swap_policy(market, tmp_path))
    config = yaml.safe_load((stack.home / "config.yaml").read_text())
    config["chains"][0]["rpc_url"] = main
    if check is not None:
        config["chains"][0]["check_rpc_url"] = check
    (stack.home / "config.yaml").write_text(yaml.safe_dump(config))
    stack.start()
    key = stack.funded_session_key()
    return stack, stack.client_token("bot"), key["address"].lower()


def _quote_lie(factor_num: int, factor_den: int):
    """Bend every QuoterV2 answer: amountOut times factor."""

    def lie(call: dict, result: str) -> str:
        if not str(call.get("data", "")).startswith("0xc6a5026a") or not isinstance(result, str):
            return result
        told = int(result[2:66], 16) * factor_num // factor_den
        return "0x" + told.to_bytes(32, "big").hex() + result[66:]

    return lie


def test_a_node_that_under_quotes_alone_gets_an_escalation_never_a_signature(
    make_stack, chain, market, tmp_path
):
    node = LyingNode(chain.url)
    try:
        node.call_lie = _quote_lie(1, 2)  # half the true quote: the minimum the bot derives from it is half
        stack, token, payer = _with_node(make_stack, chain, market, tmp_path, main=node.url, check=None)
        tusd = market["tokens"][0]["address"]
        lied_min = honest_min(chain, market, tusd) // 2
        sent = nonce(chain.url, payer)
        reply = sign(
            stack, token, swap_intent(market, swap_data(market["weth"], tusd, payer, AMOUNT, lied_min))
        )
        _refused_before_broadcast(chain, payer, reply, "swap.price_impact", outcome="pending_approval")
        assert nonce(chain.url, payer) == sent
    finally:
        node.shutdown()


def test_a_node_that_under_quotes_is_outvoted_by_the_check_endpoint(make_stack, chain, market, tmp_path):
    node = LyingNode(chain.url)
    try:
        node.call_lie = _quote_lie(1, 2)
        stack, token, payer = _with_node(make_stack, chain, market, tmp_path, main=node.url, check=chain.url)
        tusd = market["tokens"][0]["address"]
        sent = nonce(chain.url, payer)
        reply = sign(
            stack,
            token,
            swap_intent(
                market, swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd) // 2)
            ),
        )
        _refused_before_broadcast(chain, payer, reply, "swap.min_out")
        assert nonce(chain.url, payer) == sent
        # the honest minimum still signs through the lying node: the higher quote is the check's
        honest = sign(
            stack,
            token,
            swap_intent(
                market, swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd))
            ),
        )
        assert honest["status"] == "signed", honest
    finally:
        node.shutdown()


def test_a_node_that_over_quotes_can_only_make_the_signer_refuse(make_stack, chain, market, tmp_path):
    node = LyingNode(chain.url)
    try:
        node.call_lie = _quote_lie(2, 1)
        stack, token, payer = _with_node(make_stack, chain, market, tmp_path, main=node.url, check=None)
        tusd = market["tokens"][0]["address"]
        reply = sign(
            stack,
            token,
            swap_intent(
                market, swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd))
            ),
        )
        _refused_before_broadcast(chain, payer, reply, "swap.min_out")
    finally:
        node.shutdown()


def test_a_sandwich_between_quote_and_execution_reverts_on_chain(swapper, chain, market):
    """The signer signs at the honest quote less half the bound; a large buy lands first in the same
    block; the swap's own minimum makes it revert, so the key loses gas, never value."""
    stack, token, payer = swapper
    tusd = market["tokens"][1]["address"]  # TOWL: its pool is left moved, the other tests use TUSD's
    minimum = honest_min(chain, market, tusd)
    eth_before, tusd_before = (
        int(rpc(chain.url, "eth_getBalance", [payer, "latest"]), 16),
        token_balance(chain.url, tusd, payer),
    )
    attacker = rpc(chain.url, "eth_accounts")[3]
    rpc(chain.url, "evm_setAutomine", [False])
    try:
        reply = sign(
            stack, token, swap_intent(market, swap_data(market["weth"], tusd, payer, AMOUNT, minimum))
        )
        assert reply["status"] == "signed", reply
        front = swap_data(market["weth"], tusd, attacker.lower(), 20 * 10**18, 0)
        rpc(
            chain.url,
            "eth_sendTransaction",
            [
                {
                    "from": attacker,
                    "to": market["router"],
                    "value": hex(20 * 10**18),
                    "data": "0x" + front.hex(),
                    "gas": hex(500_000),
                    "maxPriorityFeePerGas": hex(50 * 10**9),
                    "maxFeePerGas": hex(100 * 10**9),
                }
            ],
        )
        rpc(chain.url, "evm_mine", [])
    finally:
        rpc(chain.url, "evm_setAutomine", [True])
    receipt = wait_receipt(chain, reply["tx_hash"])
    assert receipt["status"] == "0x0"  # "Too little received"
    assert token_balance(chain.url, tusd, payer) == tusd_before
    spent = eth_before - int(rpc(chain.url, "eth_getBalance", [payer, "latest"]), 16)
    gas_paid = int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
    assert spent == gas_paid  # the value stayed: only gas was lost


def test_a_swap_over_the_limit_asks_the_companion_with_the_simulated_balance_changes(swapper, chain, market):
    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    amount = 2 * AMOUNT + MILLI  # 0.011 ETH: over the 0.01 ETH per transaction
    q = quote(chain.url, market, market["weth"], tusd, amount)
    reply = sign(
        stack,
        token,
        swap_intent(market, swap_data(market["weth"], tusd, payer, amount, q - q // 200), value=amount),
    )
    assert reply["status"] == "pending_approval", reply
    assert findings(reply) == {"limit.per_tx"}, findings(reply)  # the swap itself passed every check
    waited = stack.call_sync(stack.admin_token, "approvals.wait", {"after": 0, "timeout": 0})
    request = next(
        r["request"] for r in waited["requests"] if r["request"]["request_id"] == reply["request_id"]
    )
    simulation = request["simulation"]
    assert simulation["source"] == "eth_simulateV1"
    mine = {c["asset"]: c for c in simulation["changes"] if c["account"] == payer}
    assert mine["native"] == {
        "account": payer,
        "asset": "native",
        "symbol": "ETH",
        "decimals": 18,
        "delta": str(-amount),
    }
    assert mine[tusd]["symbol"] == "TUSD" and int(mine[tusd]["delta"]) >= q - q // 200
    assert any(a["type"] == "swap" for a in request["actions"])


def test_a_node_simulation_can_only_make_a_swap_stricter(make_stack, chain, market, tmp_path):
    """A node that hides the outflows from its simulation relaxes nothing (a bad minimum stays denied);
    one that reports an extra outflow the signer did not decode gets the owner asked."""
    node = LyingNode(chain.url)
    try:
        stack, token, payer = _with_node(make_stack, chain, market, tmp_path, main=node.url, check=None)
        tusd = market["tokens"][0]["address"]

        def hide(result):
            result[0]["calls"][0]["logs"] = []
            return result

        node.simulate_lie = hide
        reply = sign(stack, token, swap_intent(market, swap_data(market["weth"], tusd, payer, AMOUNT, 0)))
        _refused_before_broadcast(chain, payer, reply, "swap.min_out")

        def extra_outflow(result):
            topic = "0x" + "00" * 12
            result[0]["calls"][0]["logs"].append(
                {
                    "address": tusd,
                    "topics": [
                        "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
                        topic + payer[2:],
                        topic + STRANGER[2:].lower(),
                    ],
                    "data": "0x" + (10**18).to_bytes(32, "big").hex(),
                }
            )
            return result

        node.simulate_lie = extra_outflow
        sent = nonce(chain.url, payer)
        reply = sign(
            stack,
            token,
            swap_intent(
                market, swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd))
            ),
        )
        _refused_before_broadcast(
            chain, payer, reply, "simulation.undecoded_outflow", outcome="pending_approval"
        )
        assert nonce(chain.url, payer) == sent
    finally:
        node.shutdown()


def test_every_swap_decision_replays_from_the_audit_log(swapper, chain, market):
    from signer.replay import replay_decisions
    from signer.store.db import connect

    stack, token, payer = swapper
    tusd = market["tokens"][0]["address"]
    signed = sign(
        stack,
        token,
        swap_intent(market, swap_data(market["weth"], tusd, payer, AMOUNT, honest_min(chain, market, tusd))),
    )
    denied = sign(
        stack, token, swap_intent(market, swap_data(market["weth"], tusd, STRANGER.lower(), AMOUNT, 0))
    )
    assert (signed["status"], denied["status"]) == ("signed", "denied")
    wait_receipt(chain, signed["tx_hash"])
    reader = connect(stack.paths.db, readonly=True)
    try:
        assert replay_decisions(reader) == []
        decided = [row[0] for row in reader.execute("SELECT body FROM audit WHERE kind = 'sign.decided'")]
    finally:
        reader.close()
    assert sum('"swap_quotes"' in body for body in decided) == 2  # the quote and simulation are on record


def test_a_fee_on_transfer_token_is_never_swapped_into(make_stack, chain, market, tmp_path):
    """Uniswap v2-periphery's DeflatingERC20 (1 % burnt on every transfer), listed by the owner by mistake:
    v3 pools refuse such tokens, so the signer's quote and simulation both fail, and nothing is sent."""
    from bot.devchain import DevChainError
    from bot.devmarket import approve, create_pool_with_liquidity, deploy_token, selector, send

    deployer = rpc(chain.url, "eth_accounts")[0].lower()
    deflating = deploy_token(chain.url, deployer, fee_on_transfer=True)
    send(chain.url, deployer, market["weth"], selector("deposit()"), value=10**18, what="wrapping ETH")
    approve(chain.url, deployer, deflating, market["position_manager"], 2**256 - 1)
    with pytest.raises(DevChainError, match="adding liquidity failed"):  # the pool checks what it received
        create_pool_with_liquidity(
            chain.url, deployer, market["position_manager"], market["weth"], deflating, 3000, 10**18
        )
    policy = swap_policy(market, tmp_path)
    text = policy.read_text().replace(
        "\nswaps:\n",
        f'\n  - {{chain: 31337, asset: "{deflating}", symbol: DEFL, decimals: 18, per_tx: "50", '
        f'price_usd: "1"}}\n\nswaps:\n',
        1,
    )
    text = text.replace("  tokens_out: [", f'  tokens_out: [{{chain: 31337, asset: "{deflating}"}}, ', 1)
    policy.write_text(text)
    stack = make_stack(chain.url, policy=policy).start()
    payer = stack.funded_session_key()["address"].lower()
    token = stack.client_token("bot")
    sent = nonce(chain.url, payer)
    reply = sign(
        stack, token, swap_intent(market, swap_data(market["weth"], deflating, payer, AMOUNT, 10**18))
    )
    assert reply["status"] in ("denied", "pending_approval"), reply
    assert {"swap.quote_unavailable", "simulation.reverted"} <= findings(reply), findings(reply)
    assert reply["status"] == "denied"  # the simulated revert decides
    assert nonce(chain.url, payer) == sent
