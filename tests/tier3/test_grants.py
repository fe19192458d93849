"""Policy -> caveats and back, and the signer's refusal of any grant wider than the policy
(property tests: every widening of every bound is refused; every narrowing is accepted)."""

from __future__ import annotations

import dataclasses

import coincurve
import pytest
from hypothesis import given, settings, strategies as st

from companion_bridge.companion.tier3 import sign_grant
from policies.intent import NATIVE
from policies.loader import load_policy
from signer.tier3.grants import verify_grant
from signer.wire.delegation import Caveat, Delegation
from signer.wire.grants import (
    ENFORCERS,
    EXACT_CALLDATA,
    NATIVE_TOTAL,
    NONCE,
    REDEEMER,
    TIMESTAMP,
    GrantError,
    check_lane,
    derive_lanes,
    describe,
    lifetime_bound,
    parse_lane,
)
from signer.wire.settings import DelegationContracts
from signer.wire.txcodec import address_of
from tests.conftest import DEV_POLICY, FRIEND, STRANGER

POLICY = load_policy(DEV_POLICY)
CHAIN = 31337
NOW = 1_800_000_000
ENFORCER_ADDRESSES = {name: "0x" + f"{i + 1:040x}" for i, name in enumerate(ENFORCERS)}
MANAGER = "0x" + "aa" * 20
CONTRACTS = DelegationContracts(
    manager=MANAGER,
    stateless_delegator="0x" + "bb" * 20,
    enforcers=ENFORCER_ADDRESSES,
    code_hashes={a: "0x" + "11" * 32 for a in [MANAGER, "0x" + "bb" * 20, *ENFORCER_ADDRESSES.values()]},
)
MAIN = coincurve.PrivateKey(b"\x01" * 32)
SESSION = "0x" + "cc" * 20


def native_lane():
    (lane,) = derive_lanes(POLICY, CHAIN, expires_at=NOW + 86400, nonce=0, start=NOW)
    return lane


def test_the_dev_policy_becomes_one_native_lane_in_words():
    lane = native_lane()
    assert lane.asset == NATIVE and lane.targets == (FRIEND.lower(),)
    assert (lane.value_lte, lane.period_amount, lane.period_seconds) == (10**16, 5 * 10**16, 86400)
    assert describe(lane, POLICY, CHAIN) == (
        "this key may send at most 0.01 ETH per transaction, 0.05 ETH per day and 0.05 ETH in all, only to dev-friend "
        f"({FRIEND.lower()}), until 2027-01-16 08:00 UTC"
    )


def test_caveats_round_trip_and_verify():
    lane = native_lane()
    delegation = lane.delegation(
        delegate=SESSION, delegator=address_of(MAIN), salt=7, enforcers=ENFORCER_ADDRESSES
    )
    assert parse_lane(delegation, ENFORCER_ADDRESSES) == lane
    signed = sign_grant(
        MAIN,
        [lane],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=7,
    )
    account, lanes = verify_grant(
        signed, chain_id=CHAIN, contracts=CONTRACTS, policy=POLICY, delegate=SESSION, not_after=NOW + 86400
    )
    assert account == address_of(MAIN) and lanes == (lane,)


widenings = st.one_of(
    st.integers(1, 10**30).map(lambda k: {"value_lte": 10**16 + k}),
    st.integers(1, 10**30).map(lambda k: {"period_amount": 5 * 10**16 + k}),
    st.sampled_from([3600, 43200, 172800]).map(lambda s: {"period_seconds": s}),
    st.just({"targets": (FRIEND.lower(), STRANGER.lower())}),
    st.integers(1, 10**9).map(lambda k: {"expires_at": NOW + 86400 + k}),
    st.integers(1, 10**30).map(lambda k: {"total": 5 * 10**16 + k}),  # the lifetime cap, above the policy's
)


@settings(max_examples=80, deadline=None)
@given(change=widenings)
def test_every_widening_is_refused(change):
    wide = dataclasses.replace(native_lane(), **change)
    with pytest.raises(GrantError):
        check_lane(wide, POLICY, CHAIN, not_after=NOW + 86400)
    signed = sign_grant(
        MAIN,
        [wide],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=1,
    )
    with pytest.raises(GrantError):
        verify_grant(
            signed,
            chain_id=CHAIN,
            contracts=CONTRACTS,
            policy=POLICY,
            delegate=SESSION,
            not_after=NOW + 86400,
        )


@settings(max_examples=60, deadline=None)
@given(value=st.integers(0, 10**16), amount=st.integers(1, 5 * 10**16), expiry=st.integers(NOW, NOW + 86400))
def test_every_narrowing_is_accepted(value, amount, expiry):
    narrow = dataclasses.replace(native_lane(), value_lte=value, period_amount=amount, expires_at=expiry)
    check_lane(narrow, POLICY, CHAIN, not_after=NOW + 86400)


def _with_caveats(caveats: tuple[Caveat, ...]) -> Delegation:
    return Delegation(SESSION, address_of(MAIN), caveats, 1)


def test_malformed_grants_are_refused():
    caveats = native_lane().caveats(ENFORCER_ADDRESSES, delegate=SESSION, delegator=address_of(MAIN))
    stamp = ENFORCER_ADDRESSES[TIMESTAMP]
    without = lambda name: tuple(c for c in caveats if c.enforcer != ENFORCER_ADDRESSES[name])  # noqa: E731
    cases = {
        "not one of this chain's configured enforcers": caveats + (Caveat("0x" + "ee" * 20, b""),),
        "appears twice": caveats + (caveats[0],),
        "has no TimestampEnforcer": tuple(c for c in caveats if c.enforcer != stamp),
        "never expires": tuple(Caveat(c.enforcer, b"\0" * 32) if c.enforcer == stamp else c for c in caveats),
        "must pin empty calldata": tuple(
            c for c in caveats if c.enforcer != ENFORCER_ADDRESSES[EXACT_CALLDATA]
        ),
        "has no NonceEnforcer": without(NONCE),
        "has no RedeemerEnforcer": without(REDEEMER),
        "Redeemer caveat must name exactly the session key": without(REDEEMER)
        + (Caveat(ENFORCER_ADDRESSES[REDEEMER], bytes.fromhex(SESSION[2:]) + b"\x11" * 20),),
        "lifetime total \\(NativeTokenTransferAmount\\)": without(NATIVE_TOTAL),
        "lifetime total is zero": without(NATIVE_TOTAL)
        + (Caveat(ENFORCER_ADDRESSES[NATIVE_TOTAL], b"\0" * 32),),
    }
    for words, bad in cases.items():
        with pytest.raises(GrantError, match=words):
            parse_lane(_with_caveats(bad), ENFORCER_ADDRESSES)


@settings(max_examples=60, deadline=None)
@given(span=st.integers(1, 60 * 86400), start=st.integers(0, 2**40))
def test_the_lifetime_bound_is_what_the_policy_lets_out_over_the_grant(span, start):
    """Each window lets its limit out once per fixed period the grant touches; the bound is the least."""
    windows = POLICY.index.assets[(CHAIN, NATIVE)].windows
    bound = lifetime_bound(windows, start, start + span)
    periods = {w.seconds: -(-span // w.seconds) for w in windows}
    assert bound == min(w.limit * periods[w.seconds] for w in windows)
    assert all(bound <= w.limit * periods[w.seconds] for w in windows)


def test_the_nonce_is_signed_into_every_lane():
    lane = native_lane()
    from dataclasses import replace as swap

    signed = sign_grant(
        MAIN,
        [lane],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=1,
    )
    assert parse_lane(signed[0], ENFORCER_ADDRESSES).nonce == 0
    later = sign_grant(
        MAIN,
        [swap(lane, nonce=3)],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=2,
    )
    assert parse_lane(later[0], ENFORCER_ADDRESSES).nonce == 3


def test_signature_delegate_and_duplicate_lanes_are_checked():
    lane = native_lane()
    signed = sign_grant(
        MAIN,
        [lane],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=1,
    )
    kwargs = dict(chain_id=CHAIN, contracts=CONTRACTS, policy=POLICY, not_after=NOW + 86400)
    with pytest.raises(GrantError, match="not this chain's session key"):
        verify_grant(signed, delegate="0x" + "dd" * 20, **kwargs)
    other = coincurve.PrivateKey(b"\x02" * 32)
    forged = [
        signed[0].signed(
            sign_grant(
                other,
                [lane],
                session_address=SESSION,
                chain_id=CHAIN,
                manager=MANAGER,
                enforcers=ENFORCER_ADDRESSES,
                salt=1,
            )[0].signature
        )
    ]
    with pytest.raises(GrantError, match="not the main account's"):
        verify_grant(forged, delegate=SESSION, **kwargs)
    with pytest.raises(GrantError, match="signature"):  # signed for another chain's domain
        verify_grant(
            sign_grant(
                MAIN,
                [lane],
                session_address=SESSION,
                chain_id=1,
                manager=MANAGER,
                enforcers=ENFORCER_ADDRESSES,
                salt=1,
            ),
            delegate=SESSION,
            **kwargs,
        )
    twice = sign_grant(
        MAIN,
        [lane, lane],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=1,
    )
    with pytest.raises(GrantError, match="limits would add up"):
        verify_grant(twice, delegate=SESSION, **kwargs)


def test_a_grant_offer_signed_by_another_eip712_library_verifies():
    """The phone companion's path: it gets the offer (words + EIP-712 documents), signs each document with
    its own library (here eth-account's sign_typed_data), and the signer accepts the result."""
    import json

    from eth_account import Account
    from eth_utils import to_checksum_address

    from companion_bridge.companion.tier3 import grant_offer, signed_from_offer

    lane = native_lane()
    offer = json.loads(
        json.dumps(
            grant_offer(
                [lane],
                [describe(lane, POLICY, CHAIN)],
                session_address=SESSION,
                delegator=address_of(MAIN),
                chain_id=CHAIN,
                manager=MANAGER,
                enforcers=ENFORCER_ADDRESSES,
                salt=5,
            )
        )
    )
    assert offer["words"][0].startswith("this key may send at most 0.01 ETH")
    signatures = []
    for document in offer["typed_data"]:
        document["message"]["salt"] = int(document["message"]["salt"])
        for field in ("delegate", "delegator"):
            document["message"][field] = to_checksum_address(document["message"][field])
        document["domain"]["verifyingContract"] = to_checksum_address(document["domain"]["verifyingContract"])
        signed = Account.sign_typed_data(MAIN.secret, full_message=document)
        signatures.append("0x" + bytes(signed.signature).hex())
    delegations = signed_from_offer(offer, signatures)
    account, lanes = verify_grant(
        delegations,
        chain_id=CHAIN,
        contracts=CONTRACTS,
        policy=POLICY,
        delegate=SESSION,
        not_after=NOW + 86400,
    )
    assert account == address_of(MAIN) and lanes == (lane,)
    other = coincurve.PrivateKey(b"\x03" * 32)
    forged = Account.sign_typed_data(other.secret, full_message=document)
    from signer.wire.delegation import DelegationError

    with pytest.raises(DelegationError, match="not the delegator's"):
        signed_from_offer(offer, ["0x" + bytes(forged.signature).hex()])


@settings(max_examples=200, deadline=None)
@given(
    junk=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=6),
        max_leaves=12,
    ),
    field=st.sampled_from(["delegate", "delegator", "authority", "caveats", "salt", "signature"]),
)
def test_malformed_delegation_json_gets_a_worded_error_never_a_crash(junk, field):
    from signer.wire.delegation import DelegationError

    good = (
        native_lane()
        .delegation(delegate=SESSION, delegator=address_of(MAIN), salt=1, enforcers=ENFORCER_ADDRESSES)
        .to_json()
    )
    try:
        parsed = Delegation.from_json({**good, field: junk})
    except DelegationError as exc:
        assert str(exc)
    else:
        assert isinstance(parsed, Delegation)


TOKEN = "0x" + "7e" * 20
TOKEN_POLICY = load_policy(DEV_POLICY).model_validate(
    {
        **load_policy(DEV_POLICY).model_dump(mode="json"),
        "assets": [
            *load_policy(DEV_POLICY).model_dump(mode="json")["assets"],
            {
                "chain": CHAIN,
                "asset": TOKEN,
                "symbol": "TT",
                "decimals": 6,
                "per_tx": "2",
                "windows": {"24h": "5", "7d": "20"},
            },
        ],
    }
)


def token_lane():
    lanes = derive_lanes(TOKEN_POLICY, CHAIN, expires_at=NOW + 3 * 86400, nonce=4, start=NOW)
    return next(lane for lane in lanes if lane.asset == TOKEN)


def test_an_erc20_lane_carries_its_per_transaction_cap_and_lifetime_total():
    lane = token_lane()
    assert (lane.token_per_tx, lane.total, lane.nonce) == (
        2 * 10**6,
        15 * 10**6,
        4,
    )  # 5 a day for 3 days < 20
    signed = sign_grant(
        MAIN,
        [lane],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=3,
    )
    _, (back,) = verify_grant(
        signed,
        chain_id=CHAIN,
        contracts=CONTRACTS,
        policy=TOKEN_POLICY,
        delegate=SESSION,
        not_after=NOW + 3 * 86400,
    )
    assert back == lane
    assert "at most 2 TT per transaction, 5 TT per day and 15 TT in all" in describe(
        lane, TOKEN_POLICY, CHAIN
    )


@settings(max_examples=60, deadline=None)
@given(
    change=st.one_of(
        st.integers(1, 10**30).map(lambda k: {"token_per_tx": 2 * 10**6 + k}),
        st.integers(1, 10**30).map(lambda k: {"total": 15 * 10**6 + k}),
        st.just({"token_per_tx": 0}),
        st.just({"total": 0}),
    )
)
def test_every_widening_of_an_erc20_lane_cap_is_refused(change):
    wide = dataclasses.replace(token_lane(), **change)
    with pytest.raises(GrantError):
        signed = sign_grant(
            MAIN,
            [wide],
            session_address=SESSION,
            chain_id=CHAIN,
            manager=MANAGER,
            enforcers=ENFORCER_ADDRESSES,
            salt=1,
        )
        verify_grant(
            signed,
            chain_id=CHAIN,
            contracts=CONTRACTS,
            policy=TOKEN_POLICY,
            delegate=SESSION,
            not_after=NOW + 3 * 86400,
        )


@settings(max_examples=60, deadline=None)
@given(cap=st.integers(1, 2 * 10**6), total=st.integers(1, 15 * 10**6))
def test_every_narrowing_of_an_erc20_lane_cap_is_accepted(cap, total):
    narrow = dataclasses.replace(token_lane(), token_per_tx=cap, total=total)
    signed = sign_grant(
        MAIN,
        [narrow],
        session_address=SESSION,
        chain_id=CHAIN,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=1,
    )
    verify_grant(
        signed,
        chain_id=CHAIN,
        contracts=CONTRACTS,
        policy=TOKEN_POLICY,
        delegate=SESSION,
        not_after=NOW + 3 * 86400,
    )


def test_an_erc20_cap_on_another_token_or_account_is_refused():
    from signer.wire.grants import ERC20_TX_CAP

    lane = token_lane()
    caveats = lane.caveats(ENFORCER_ADDRESSES, delegate=SESSION, delegator=address_of(MAIN))
    cap_at = ENFORCER_ADDRESSES[ERC20_TX_CAP]
    for bad_terms in (
        b"\x00" + bytes.fromhex(TOKEN[2:]) + bytes.fromhex(address_of(MAIN)[2:]) + b"\0" * 31 + b"\1",
        b"\x01" + b"\x11" * 20 + bytes.fromhex(address_of(MAIN)[2:]) + b"\0" * 31 + b"\1",
        b"\x01" + bytes.fromhex(TOKEN[2:]) + b"\x22" * 20 + b"\0" * 31 + b"\1",
    ):
        bad = tuple(Caveat(cap_at, bad_terms) if c.enforcer == cap_at else c for c in caveats)
        with pytest.raises(GrantError, match="per-transaction cap"):
            parse_lane(_with_caveats(bad), ENFORCER_ADDRESSES)


def test_a_period_start_in_the_past_does_not_stretch_the_lifetime_bound():
    """The lifetime bound counts from when the signer takes the grant (an hour's slack for clocks): a
    grant that puts its period start a year back to multiply its periods is refused."""
    year = 365 * 86400
    lane = native_lane()
    early = dataclasses.replace(
        lane,
        period_start=NOW - year,
        total=lifetime_bound(POLICY.index.assets[(CHAIN, NATIVE)].windows, NOW - year, lane.expires_at),
    )
    check_lane(
        early, POLICY, CHAIN, not_after=NOW + 86400
    )  # without the signer's clock: the grant's own start
    with pytest.raises(GrantError, match="lifetime total"):
        check_lane(early, POLICY, CHAIN, not_after=NOW + 86400, taken_at=NOW)
    check_lane(
        dataclasses.replace(lane, period_start=NOW - 3000), POLICY, CHAIN, not_after=NOW + 86400, taken_at=NOW
    )  # a clock an hour apart is no widening
