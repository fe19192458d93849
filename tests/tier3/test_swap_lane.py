"""The Tier 3 swap lane on real bytecode: Uniswap v3 from npm, the Delegation Framework's enforcers.

The signer carries an ETH -> token swap it checked as on Tier 2 (its own decode, quote, slippage
bound) through the swap lane, and the tokens land in the main account. The stolen session key, calling
the DelegationManager itself, cannot pay the output to anyone else, call another function or target,
go over the per-transaction or period cap, keep ETH in the router for itself, or pull the main
account's WETH through an old allowance: each of those reverts on chain, and no balance moves.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from eth_abi import encode

from bot.devchain import rpc
from bot.devmarket import deploy_swap_market, selector
from companion_bridge.companion import tier3 as companion
from policies.loader import load_policy
from signer.wire.exchange import new_idempotency_key
from signer.wire.grants import NATIVE, SWAP, derive_lanes, describe
from signer.wire.swap_template import SwapCall, exact_input_single, swap_call
from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559
from tests.conftest import balance, wait_receipt
from tests.defi.conftest import multicall_data, quote, swap_policy, token_balance
from tests.defi.test_swaps_anvil import sign
from tests.tier3.conftest import (
    CHAIN_ID,
    chain_time,
    new_main_account,
    nonce,
    send_raw,
    steal_session_key,
    tier3_stack,
)
from tests.tier3.test_stolen_host import attack

pytestmark = [pytest.mark.chain, pytest.mark.slow]
MILLI = 10**15
AMOUNT = 5 * MILLI  # 0.005 ETH
PER_TX = 10 * MILLI  # the dev policy's ETH per_tx; its day window is 0.05 ETH, half of it the swap lane's
THIEF = "0x" + "7e" * 20
DAY = 86400


@pytest.fixture(scope="module")
def market(chain3) -> dict:
    return deploy_swap_market(chain3.url)


@dataclasses.dataclass
class Granted:
    stack: object
    main: object
    key: dict
    lane: object
    delegation: object
    stolen: object
    tusd: str
    weth: str


@pytest.fixture()
def granted(make_stack, chain3, market, tmp_path) -> Granted:
    path = swap_policy(market, tmp_path)
    stack = tier3_stack(make_stack, chain3, policy=path)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    policy = load_policy(path)
    now = chain_time(chain3)
    lanes = derive_lanes(
        policy, CHAIN_ID, expires_at=now + 3 * DAY, nonce=0, start=now, delegator=main.address
    )
    delegations = companion.sign_grant(
        main.key,
        lanes,
        session_address=key["address"],
        chain_id=CHAIN_ID,
        manager=chain3.contracts["manager"],
        enforcers=chain3.contracts["enforcers"],
        salt=7,
    )
    reply = stack.call_sync(
        stack.admin_token,
        "tier3.grant",
        {
            "idempotency_key": new_idempotency_key("t"),
            "chain_id": CHAIN_ID,
            "delegations": [d.to_json() for d in delegations],
        },
    )
    assert reply["grant"]["account"] == main.address, reply
    (lane, delegation) = next((x, d) for x, d in zip(lanes, delegations) if x.asset == SWAP)
    return Granted(
        stack,
        main,
        key,
        lane,
        delegation,
        steal_session_key(stack, key["key_id"]),
        market["tokens"][0]["address"].lower(),
        market["weth"].lower(),
    )


def template(g: Granted, chain, *, amount_in=AMOUNT, recipient=None, token_out=None, fee=3000, limit=0):
    return swap_call(
        SwapCall(
            g.weth,
            token_out or g.tusd,
            fee,
            recipient or g.main.address,
            chain_time(chain) + 600,
            amount_in,
            0,  # the thief's minimum: nothing
            limit,
        )
    )


def test_the_grant_carries_a_swap_lane_in_words_and_splits_the_eth_limits(granted, chain3, market, tmp_path):
    policy = load_policy(swap_policy(market, tmp_path))
    words = describe(granted.lane, policy, CHAIN_ID)
    assert words.startswith(
        f"this key may swap ETH for TUSD ({granted.tusd}) on uniswap-v3's router at {market['router'].lower()}: "
        "at most 0.01 ETH per transaction, 0.025 ETH per day"
    ), words
    assert f"the tokens back to your account {granted.main.address} only" in words
    native = next(
        lane
        for lane in derive_lanes(policy, CHAIN_ID, expires_at=2 * DAY, nonce=0, start=DAY, delegator=THIEF)
        if lane.asset == NATIVE
    )
    assert native.period_amount + granted.lane.period_amount == 50 * MILLI  # the policy's 0.05 ETH a day


def test_a_swap_inside_the_lane_is_checked_like_tier2_and_lands_in_the_main_account(granted, chain3, market):
    g = granted
    q = quote(chain3.url, market, g.weth, g.tusd, AMOUNT)
    minimum = q - q * 50 // 10_000
    data = exact_input_single(
        SwapCall(g.weth, g.tusd, 3000, g.main.address, int(time.time()) + 300, AMOUNT, minimum, 0)
    )
    tusd0, eth0 = token_balance(chain3.url, g.tusd, g.main.address), balance(chain3, g.main.address)
    key_tusd0 = token_balance(chain3.url, g.tusd, g.key["address"])
    intent = {"chain_id": CHAIN_ID, "to": market["router"], "value": str(AMOUNT), "data": "0x" + data.hex()}
    reply = sign(g.stack, g.stack.client_token("bot"), intent)
    assert reply["status"] == "signed", reply
    rules = {f["rule_id"] for f in reply["decision"]["findings"]}
    assert {"swap.checked", "simulation.matches"} <= rules, rules
    assert "your main account" in reply["summary"]
    receipt = wait_receipt(chain3, reply["tx_hash"])
    assert receipt["status"] == "0x1" and receipt["to"] == chain3.contracts["manager"]
    got = token_balance(chain3.url, g.tusd, g.main.address) - tusd0
    assert got >= minimum and got > 14 * 10**18  # about 15 TUSD for 0.005 ETH at $3000
    assert eth0 - balance(chain3, g.main.address) == AMOUNT  # the session key paid the gas
    assert token_balance(chain3.url, g.tusd, g.key["address"]) == key_tusd0
    assert balance(chain3, market["router"]) == 0


def test_the_signer_refuses_a_tier3_swap_paid_to_the_session_key(granted, chain3, market):
    g = granted
    data = exact_input_single(
        SwapCall(g.weth, g.tusd, 3000, g.key["address"], int(time.time()) + 300, AMOUNT, 1, 0)
    )
    intent = {"chain_id": CHAIN_ID, "to": market["router"], "value": str(AMOUNT), "data": "0x" + data.hex()}
    reply = sign(g.stack, g.stack.client_token("bot"), intent)
    assert reply["status"] == "denied" and "swap.recipient" in {
        f["rule_id"] for f in reply["decision"]["findings"]
    }


def _unmoved(chain, g: Granted, market, fn):
    """Run an attack; the main account's ETH, WETH and TUSD and the thief's TUSD must not move."""
    before = (
        balance(chain, g.main.address),
        token_balance(chain.url, g.tusd, g.main.address),
        token_balance(chain.url, g.weth, g.main.address),
        token_balance(chain.url, g.tusd, THIEF),
    )
    status, reason = fn()
    after = (
        balance(chain, g.main.address),
        token_balance(chain.url, g.tusd, g.main.address),
        token_balance(chain.url, g.weth, g.main.address),
        token_balance(chain.url, g.tusd, THIEF),
    )
    assert status == "0x0" and before == after, (status, reason)
    return reason


def test_the_stolen_key_cannot_pay_the_output_to_itself(granted, chain3, market):
    g = granted
    reason = _unmoved(
        chain3,
        g,
        market,
        lambda: attack(
            chain3, g.stolen, g.delegation, market["router"], AMOUNT, template(g, chain3, recipient=THIEF)
        ),
    )
    assert "AllowedCalldataEnforcer:invalid-calldata" in reason


@pytest.mark.parametrize("what", ["exactInputSingle alone", "exactOutputSingle", "multicall with a sweep"])
def test_the_stolen_key_cannot_call_another_function_on_the_router(granted, chain3, market, what):
    g = granted
    deadline = chain_time(chain3) + 600
    single = exact_input_single(SwapCall(g.weth, g.tusd, 3000, g.main.address, deadline, AMOUNT, 0, 0))
    if what == "exactInputSingle alone":
        data, expected = single, "AllowedMethodsEnforcer:method-not-allowed"
    elif what == "exactOutputSingle":
        types = "(address,address,uint24,address,uint256,uint256,uint256,uint160)"
        data = selector(f"exactOutputSingle({types})") + encode(
            [types], [(g.weth, g.tusd, 3000, THIEF, deadline, 10**18, AMOUNT, 0)]
        )
        expected = "AllowedMethodsEnforcer:method-not-allowed"
    else:  # the output to the router, then swept to the thief
        to_router = exact_input_single(
            SwapCall(g.weth, g.tusd, 3000, market["router"], deadline, AMOUNT, 0, 0)
        )
        sweep = selector("sweepToken(address,uint256,address)") + encode(
            ["address", "uint256", "address"], [g.tusd, 0, THIEF]
        )
        data, expected = multicall_data(to_router, sweep), "AllowedCalldataEnforcer:invalid-calldata"
    reason = _unmoved(
        chain3, g, market, lambda: attack(chain3, g.stolen, g.delegation, market["router"], AMOUNT, data)
    )
    assert expected in reason


@pytest.mark.parametrize("what", ["another token out", "another pool fee", "a price limit"])
def test_the_stolen_key_cannot_change_the_pinned_swap(granted, chain3, market, what):
    g = granted
    towl = market["tokens"][1]["address"]
    data = {
        "another token out": lambda: template(g, chain3, token_out=towl),
        "another pool fee": lambda: template(g, chain3, fee=500),
        "a price limit": lambda: template(g, chain3, limit=2**96),
    }[what]()
    reason = _unmoved(
        chain3, g, market, lambda: attack(chain3, g.stolen, g.delegation, market["router"], AMOUNT, data)
    )
    assert "AllowedCalldataEnforcer:invalid-calldata" in reason


def test_the_stolen_key_cannot_use_the_lane_on_another_target(granted, chain3, market):
    g = granted
    reason = _unmoved(
        chain3,
        g,
        market,
        lambda: attack(chain3, g.stolen, g.delegation, g.weth, AMOUNT, template(g, chain3)),
    )
    assert "AllowedTargetsEnforcer:target-address-not-allowed" in reason


def test_the_per_transaction_and_period_caps_hold_on_chain(granted, chain3, market):
    g = granted
    over = PER_TX + 1
    reason = _unmoved(
        chain3,
        g,
        market,
        lambda: attack(
            chain3, g.stolen, g.delegation, market["router"], over, template(g, chain3, amount_in=over)
        ),
    )
    assert "ValueLteEnforcer:value-too-high" in reason
    # 0.025 ETH a day for the swap lane: two swaps of 0.01 land (in the main account), the third does not
    for _ in range(2):
        status, reason = attack(
            chain3, g.stolen, g.delegation, market["router"], PER_TX, template(g, chain3, amount_in=PER_TX)
        )
        assert status == "0x1", reason
    reason = _unmoved(
        chain3,
        g,
        market,
        lambda: attack(
            chain3, g.stolen, g.delegation, market["router"], PER_TX, template(g, chain3, amount_in=PER_TX)
        ),
    )
    assert "NativeTokenPeriodTransferEnforcer:transfer-amount-exceeded" in reason
    # The signer reads what is left on chain and refuses before broadcasting, naming the rule.
    q = quote(chain3.url, market, g.weth, g.tusd, PER_TX)
    data = exact_input_single(
        SwapCall(g.weth, g.tusd, 3000, g.main.address, int(time.time()) + 300, PER_TX, q - q // 200, 0)
    )
    sent = nonce(chain3, g.key["address"])
    intent = {"chain_id": CHAIN_ID, "to": market["router"], "value": str(PER_TX), "data": "0x" + data.hex()}
    refused = sign(g.stack, g.stack.client_token("bot"), intent)
    assert refused["status"] != "signed" and refused["rule_id"] == "onchain.native_period", refused
    assert nonce(chain3, g.key["address"]) == sent


def test_eth_sent_beyond_the_input_comes_back_to_the_main_account_not_the_thief(granted, chain3, market):
    """value 0.01 ETH with amountIn of 1 gwei: without refundETH in the pinned call the rest would sit in
    the router for anyone's refundETH(); with it, the main account gets it back in the same call."""
    g = granted
    eth0, thief0 = balance(chain3, g.main.address), balance(chain3, THIEF)
    status, reason = attack(
        chain3, g.stolen, g.delegation, market["router"], PER_TX, template(g, chain3, amount_in=10**9)
    )
    assert status == "0x1", reason
    assert eth0 - balance(chain3, g.main.address) == 10**9
    assert balance(chain3, market["router"]) == 0 and balance(chain3, THIEF) == thief0


def _main_sends(chain, main, to: str, data: bytes, value: int = 0) -> None:
    tx = Eip1559Tx(CHAIN_ID, nonce(chain, main.address), 10**9, 20 * 10**9, 200_000, to, value, data)
    assert send_raw(chain, sign_eip1559(tx, main.key).raw)["status"] == "0x1"


def test_an_old_weth_allowance_cannot_be_pulled_through_the_lane(granted, chain3, market):
    """The main account holds WETH and once approved the router: a redeem that sends less ETH than its
    amountIn would make the router pull the rest as WETH. ERC20BalanceChange (the main account's WETH
    may not fall) reverts it."""
    g = granted
    _main_sends(chain3, g.main, g.weth, selector("deposit()"), value=PER_TX)
    _main_sends(
        chain3,
        g.main,
        g.weth,
        selector("approve(address,uint256)") + encode(["address", "uint256"], [market["router"], 2**256 - 1]),
    )
    reason = _unmoved(
        chain3,
        g,
        market,
        lambda: attack(
            chain3, g.stolen, g.delegation, market["router"], 0, template(g, chain3, amount_in=PER_TX)
        ),
    )
    assert "ERC20BalanceChangeEnforcer:exceeded-balance-decrease" in reason
    assert address_of(g.stolen) == g.key["address"].lower()
    assert rpc(chain3.url, "eth_getCode", [g.main.address, "latest"]).startswith("0xef0100")


def test_swap_from_chat_on_a_tier3_chain_lands_in_the_main_account(granted, chain3, market):
    """The bot's `swap` tool names the main account (the signer's `addresses` answer) as the recipient
    on a chain with a live grant; the signer redeems it through the swap lane."""
    from tests.bot.agent.conftest import attach_bot, call
    from tests.fakes.llm_server import FakeLLMServer, Reply

    g = granted
    tusd0, key_tusd0 = (
        token_balance(chain3.url, g.tusd, g.main.address),
        token_balance(chain3.url, g.tusd, g.key["address"]),
    )
    expected = quote(chain3.url, market, g.weth, g.tusd, AMOUNT)
    with FakeLLMServer() as server:
        bot = attach_bot(g.stack, server)
        server.enqueue(
            Reply(tool_calls=[call("swap", {"amount": "0.005", "token_in": "ETH", "token_out": "TUSD"})]),
            Reply(text=["Swapped."]),
        )
        out = bot.chat("swap 0.005 ETH to TUSD")
        assert "Signed and sent" in out, out
        details = bot.chat("/details")
    tx_hash = next(
        w.strip(".,;()")
        for w in details.replace("\n", " ").split()
        if w.startswith("0x") and len(w.strip(".,;()")) == 66
    )
    receipt = wait_receipt(chain3, tx_hash)
    assert receipt["status"] == "0x1" and receipt["to"] == chain3.contracts["manager"]
    got = token_balance(chain3.url, g.tusd, g.main.address) - tusd0
    assert got >= expected - expected // 200, (got, expected)
    assert token_balance(chain3.url, g.tusd, g.key["address"]) == key_tusd0
