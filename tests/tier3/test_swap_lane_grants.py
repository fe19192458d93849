"""The swap lane as the signer reads it, without a chain: derived from the policy, read back exactly,
and every widening refused (property-tested), including any byte changed in any of its caveats."""

from __future__ import annotations

import dataclasses

import coincurve
import pytest
from hypothesis import given, settings, strategies as st

from bot.devmarket import dev_policy_with_market
from companion_bridge.companion import tier3 as companion
from policies.loader import load_policy
from signer.tier3.grants import verify_grant
from signer.wire.delegation import Caveat, Delegation
from signer.wire.grants import (
    NATIVE,
    SWAP,
    GrantError,
    check_lane,
    check_shared_native,
    derive_lanes,
    describe,
    parse_lane,
    swap_lane,
)
from signer.wire.swap_template import PIN_HEAD, PIN_TAIL, VARIABLE, SwapCall, swap_call
from signer.wire.txcodec import address_of
from tests.conftest import DEV_POLICY
from tests.tier3.test_contract_lanes import CHAIN_ID, CONTRACTS, ENFORCER_ADDRESSES, MANAGER, NOW, SESSION

MILLI = 10**15
MAIN = coincurve.PrivateKey(b"\x03" * 32)
ACCOUNT = address_of(MAIN)
MARKET = {
    "weth": "0x" + "e1" * 20,
    "router": "0x" + "e2" * 20,
    "quoter": "0x" + "e3" * 20,
    "eth_price_usd": "3000",
    "tokens": [
        {"symbol": "TUSD", "address": "0x" + "e4" * 20, "decimals": 18, "price_usd": "1"},
        {"symbol": "TOWL", "address": "0x" + "e5" * 20, "decimals": 18, "price_usd": "2"},
    ],
}
TUSD, TOWL, WETH, ROUTER = (
    MARKET["tokens"][0]["address"],
    MARKET["tokens"][1]["address"],
    MARKET["weth"],
    MARKET["router"],
)


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("p") / "policy.yaml"
    path.write_text(dev_policy_with_market(DEV_POLICY.read_text(), MARKET))
    return load_policy(path)


def lanes(policy, **kw):
    return derive_lanes(
        policy, CHAIN_ID, expires_at=NOW + 3 * 86400, nonce=0, start=NOW, delegator=ACCOUNT, **kw
    )


def test_the_swap_lane_takes_half_the_eth_limits_and_the_native_lane_keeps_the_rest(policy):
    found = {lane.asset: lane for lane in lanes(policy)}
    swap, native = found[SWAP], found[NATIVE]
    assert (swap.token_in, swap.token_out, swap.fee, swap.recipient) == (WETH, TUSD, 3000, ACCOUNT)
    assert swap.period_amount == native.period_amount == 25 * MILLI  # the dev policy's 0.05 ETH a day
    assert swap.value_lte == native.value_lte == 10 * MILLI
    assert swap.total + native.total == 150 * MILLI  # 0.05 ETH a day for 3 days
    assert describe(swap, policy, CHAIN_ID).startswith(
        f"this key may swap ETH for TUSD ({TUSD}) on uniswap-v3's router at {ROUTER}: at most 0.01 ETH per "
        "transaction, 0.025 ETH per day and 0.075 ETH in all, the tokens back to your account"
    )
    assert {lane.token_out for lane in lanes(policy, swap_to=TOWL) if lane.asset == SWAP} == {TOWL}
    with pytest.raises(GrantError, match="not a token the policy lets the agent swap ETH to"):
        lanes(policy, swap_to=WETH)
    # without the main account there is nobody to pin the output to: no swap lane, the ETH limits whole
    plain = derive_lanes(policy, CHAIN_ID, expires_at=NOW + 3 * 86400, nonce=0, start=NOW)
    assert [lane.asset for lane in plain] == [NATIVE]
    assert plain[0].period_amount == 50 * MILLI


@pytest.mark.parametrize("call_limit", [None, 3])
def test_the_swap_lane_round_trips_and_a_signed_grant_verifies(policy, call_limit):
    derived = lanes(policy, call_limit=call_limit)
    for lane in derived:
        delegation = lane.delegation(
            delegate=SESSION, delegator=ACCOUNT, salt=1, enforcers=ENFORCER_ADDRESSES
        )
        assert parse_lane(delegation, ENFORCER_ADDRESSES) == lane
    signed = companion.sign_grant(
        MAIN,
        derived,
        session_address=SESSION,
        chain_id=CHAIN_ID,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=5,
    )
    _, verified = verify_grant(
        signed,
        chain_id=CHAIN_ID,
        contracts=CONTRACTS,
        policy=policy,
        delegate=SESSION,
        not_after=NOW + 3 * 86400,
        taken_at=NOW,
    )
    assert verified == tuple(derived)


def test_the_pinned_ranges_leave_only_deadline_amount_in_and_minimum_free():
    a = swap_call(SwapCall(WETH, TUSD, 3000, ACCOUNT, 1, 2, 3, 0))
    b = swap_call(SwapCall(WETH, TUSD, 3000, ACCOUNT, 10**12, 10**20, 10**30, 0))
    differing = {i for i in range(len(a)) if a[i] != b[i]}
    assert differing and all(VARIABLE[0] <= i < VARIABLE[1] for i in differing)
    assert PIN_HEAD[1] == VARIABLE[0] and PIN_TAIL[0] == VARIABLE[1] and PIN_TAIL[1] == len(a)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"value_lte": 10 * MILLI + 1}, "above the policy's per_tx"),
        ({"period_amount": 50 * MILLI + 1}, "above the policy's"),
        ({"token_out": "0x" + "77" * 20}, "not a token the policy lets"),
        ({"token_out": WETH}, "not a token the policy lets"),
        ({"token_in": TUSD}, "not the WETH"),
        ({"targets": ("0x" + "78" * 20,)}, "not a router the policy lists"),
        ({"period_seconds": 3600}, "none of the policy's windows"),
        ({"expires_at": NOW + 30 * 86400}, "lifetime total|outlives"),
    ],
)
def test_a_swap_lane_wider_than_the_policy_is_refused(policy, change, match):
    swap = next(lane for lane in lanes(policy) if lane.asset == SWAP)
    with pytest.raises(GrantError, match=match):
        check_lane(dataclasses.replace(swap, **change), policy, CHAIN_ID, not_after=NOW + 3 * 86400)


def test_the_swap_and_native_lanes_together_stay_within_the_eth_window(policy):
    derived = lanes(policy)
    check_shared_native(derived, policy, CHAIN_ID)
    whole = [
        dataclasses.replace(lane, period_amount=50 * MILLI) if lane.asset == NATIVE else lane
        for lane in derived
    ]
    with pytest.raises(GrantError, match="together"):
        check_shared_native(whole, policy, CHAIN_ID)
    longer = [
        dataclasses.replace(lane, total=lane.total * 2) if lane.asset == SWAP else lane for lane in derived
    ]
    with pytest.raises(GrantError, match="add up"):
        check_shared_native(longer, policy, CHAIN_ID)


def test_a_swap_lane_paying_anyone_but_the_main_account_is_refused(policy):
    swap = next(lane for lane in lanes(policy) if lane.asset == SWAP)
    thief = "0x" + "7e" * 20
    built = dataclasses.replace(swap, recipient=thief).delegation(
        delegate=SESSION, delegator=thief, salt=1, enforcers=ENFORCER_ADDRESSES
    )
    forged = Delegation(SESSION, ACCOUNT, built.caveats, 1)  # the thief's pins, the main account's delegation
    with pytest.raises(GrantError, match="pays only the main account"):
        parse_lane(forged, ENFORCER_ADDRESSES)


def _swap_delegation(policy) -> Delegation:
    swap = next(lane for lane in lanes(policy) if lane.asset == SWAP)
    return swap.delegation(delegate=SESSION, delegator=ACCOUNT, salt=1, enforcers=ENFORCER_ADDRESSES)


@pytest.mark.parametrize(
    "drop", ["ERC20BalanceChangeEnforcer", "NativeTokenTransferAmountEnforcer", "second pin"]
)
def test_a_swap_lane_without_one_of_its_caveats_is_refused(policy, drop):
    d = _swap_delegation(policy)
    calldata = ENFORCER_ADDRESSES["AllowedCalldataEnforcer"]
    if drop == "second pin":
        pins = [i for i, c in enumerate(d.caveats) if c.enforcer == calldata]
        caveats = tuple(c for i, c in enumerate(d.caveats) if i != pins[1])
    else:
        caveats = tuple(c for c in d.caveats if c.enforcer != ENFORCER_ADDRESSES[drop])
    with pytest.raises(GrantError):
        parse_lane(Delegation(d.delegate, d.delegator, caveats, d.salt), ENFORCER_ADDRESSES)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_byte_changed_in_a_swap_lane_is_refused_or_no_wider(policy, data):
    """Flip any byte of any caveat's terms: the signer either refuses the lane or reads one that pins the
    same router, tokens, fee and recipient with limits no larger (a smaller number is a narrower grant)."""
    d = _swap_delegation(policy)
    original = parse_lane(d, ENFORCER_ADDRESSES)
    index = data.draw(st.integers(0, len(d.caveats) - 1))
    terms = bytearray(d.caveats[index].terms)
    if not terms:
        return
    at = data.draw(st.integers(0, len(terms) - 1))
    terms[at] = data.draw(st.integers(0, 255).filter(lambda b: b != terms[at]))
    caveats = list(d.caveats)
    caveats[index] = Caveat(caveats[index].enforcer, bytes(terms))
    changed = Delegation(d.delegate, d.delegator, tuple(caveats), d.salt)
    try:
        lane = parse_lane(changed, ENFORCER_ADDRESSES)
        check_lane(lane, policy, CHAIN_ID, not_after=NOW + 3 * 86400, taken_at=NOW)
        check_shared_native(
            [lane, *(x for x in lanes(policy) if x.asset == NATIVE)], policy, CHAIN_ID, taken_at=NOW
        )
    except GrantError:
        return
    assert (lane.targets, lane.token_in, lane.token_out, lane.fee, lane.recipient) == (
        original.targets,
        original.token_in,
        original.token_out,
        original.fee,
        original.recipient,
    )
    assert lane.value_lte <= original.value_lte and lane.period_amount <= original.period_amount
    assert lane.total <= original.total and lane.expires_at <= NOW + 3 * 86400


def test_no_swap_lane_when_the_policy_swaps_no_eth(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(
        dev_policy_with_market(DEV_POLICY.read_text(), MARKET).replace(
            "tokens_in: [{chain: 31337, asset: native}, ", "tokens_in: ["
        )
    )
    policy = load_policy(path)
    assert swap_lane(policy, CHAIN_ID, delegator=ACCOUNT, expires_at=NOW + 86400, start=NOW, nonce=0) is None
