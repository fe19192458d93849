"""Contract-call lanes: the policy's `contracts` / `opaque_calls` as AllowedTargets + AllowedMethods +
ValueLte delegations. Pure checks first (every widening refused), then the real bytecode on anvil: the
stolen session key cannot call another selector, another contract, or send more value than the bound;
the signer carries an allowed call through the lane and names the on-chain rule for one it would not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import coincurve
import pytest
from hypothesis import given, settings, strategies as st

from bot.devchain import rpc
from companion_bridge.companion import tier3 as companion
from policies.loader import load_policy
from signer.tier3.grants import verify_grant
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.grants import (
    CONTRACT,
    ENFORCERS,
    GrantError,
    check_lane,
    contract_lanes,
    derive_lanes,
    describe,
    parse_lane,
)
from signer.wire.settings import DelegationContracts
from signer.wire.txcodec import address_of
from tests.conftest import DEV_POLICY, balance, wait_receipt
from tests.tier3.conftest import CHAIN_ID, chain_time, new_main_account, nonce, steal_session_key, tier3_stack
from tests.tier3.test_stolen_host import attack

SINK = "0x" + "5a" * 20
OTHER = "0x" + "5b" * 20
SELECTOR = "0x12345678"
SECOND = "0xabcdef01"
MULTICALL = "0xac9650d8"  # multicall(bytes[]): decoded, so it is listed under `contracts`
MILLI = 10**15
NOW = 1_800_000_000
ENFORCER_ADDRESSES = {name: "0x" + f"{i + 1:040x}" for i, name in enumerate(ENFORCERS)}
MANAGER = "0x" + "aa" * 20
CONTRACTS = DelegationContracts(
    manager=MANAGER,
    stateless_delegator="0x" + "bb" * 20,
    enforcers=ENFORCER_ADDRESSES,
    code_hashes={a: "0x" + "11" * 32 for a in [MANAGER, "0x" + "bb" * 20, *ENFORCER_ADDRESSES.values()]},
)
MAIN = coincurve.PrivateKey(b"\x02" * 32)
SESSION = "0x" + "cc" * 20


def policy_text(sink: str, *, contracts: str = "[]", max_value: str = "0.005", second: bool = False) -> str:
    opaque = f'\n  - {{chain: 31337, address: "{sink}", selector: "{SELECTOR}", max_value: "{max_value}"}}'
    if second:
        opaque += f'\n  - {{chain: 31337, address: "{sink}", selector: "{SECOND}", max_value: "{max_value}"}}'
    return (
        DEV_POLICY.read_text()
        .replace("opaque_calls: []", "opaque_calls:" + opaque)
        .replace("contracts: []", f"contracts: {contracts}")
    )


def write_policy(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


@pytest.fixture()
def policy(tmp_path):
    contracts = (
        f'[{{chain: 31337, address: "{OTHER}", name: "router", selectors: ["{MULTICALL}", "0xa9059cbb"]}}]'
    )
    return load_policy(write_policy(tmp_path, policy_text(SINK, contracts=contracts, second=True)))


def lanes_of(policy, call_limit=None):
    return {
        lane.targets[0]: lane
        for lane in derive_lanes(
            policy, CHAIN_ID, expires_at=NOW + 86400, nonce=0, start=NOW, call_limit=call_limit
        )
        if lane.asset == CONTRACT
    }


def test_each_listed_contract_becomes_one_lane_with_exactly_its_selectors(policy):
    lanes = lanes_of(policy, call_limit=3)
    sink, router = lanes[SINK], lanes[OTHER]
    assert (
        sink.selectors == (bytes.fromhex(SELECTOR[2:]), bytes.fromhex(SECOND[2:]))
        and sink.value_lte == 5 * MILLI
    )
    # transfer() on a listed contract never gets a lane: it would move the account's tokens to anyone.
    assert router.selectors == (bytes.fromhex(MULTICALL[2:]),) and router.value_lte == 0
    assert describe(router, policy, CHAIN_ID).startswith(
        f"this key may call multicall() ({MULTICALL}) on router ({OTHER}) with at most 0 ETH per call"
    )
    # Without a call limit nothing on chain bounds the total value: the lane carries none.
    assert lanes_of(policy)[SINK].value_lte == 0


def test_contract_lane_caveats_round_trip_and_verify(policy):
    lanes = derive_lanes(policy, CHAIN_ID, expires_at=NOW + 86400, nonce=0, start=NOW, call_limit=3)
    for lane in lanes:
        d = lane.delegation(
            delegate=SESSION, delegator=address_of(MAIN), salt=1, enforcers=ENFORCER_ADDRESSES
        )
        assert parse_lane(d, ENFORCER_ADDRESSES) == lane
    signed = companion.sign_grant(
        MAIN,
        lanes,
        session_address=SESSION,
        chain_id=CHAIN_ID,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=9,
    )
    _, verified = verify_grant(
        signed, chain_id=CHAIN_ID, contracts=CONTRACTS, policy=policy, delegate=SESSION, not_after=NOW + 86400
    )
    assert verified == tuple(lanes)


def test_an_undecoded_selector_under_contracts_gets_no_lane(tmp_path):
    contracts = f'[{{chain: 31337, address: "{OTHER}", name: "router", selectors: ["0x87654321"]}}]'
    policy = load_policy(write_policy(tmp_path, policy_text(SINK, contracts=contracts)))
    assert OTHER not in lanes_of(policy)  # the policy denies it (decode.opaque): the lane would be wider
    (lane,) = contract_lanes(policy, CHAIN_ID, expires_at=NOW + 86400, call_limit=None)
    with pytest.raises(GrantError, match="the policy lists no call to it"):
        check_lane(
            dataclasses.replace(lane, targets=(OTHER,), selectors=(b"\x87\x65\x43\x21",)),
            policy,
            CHAIN_ID,
            not_after=NOW + 86400,
        )


@pytest.mark.parametrize(
    "target", ["main", MANAGER, "0x" + "bb" * 20, ENFORCER_ADDRESSES["LimitedCallsEnforcer"]]
)
def test_a_contract_lane_may_never_call_the_grants_own_machinery(tmp_path, target):
    """Even if the policy lists it: as the main account, `execute` on the account runs anything and the
    manager's `enableDelegation` undoes a revocation."""
    target = address_of(MAIN) if target == "main" else target
    policy = load_policy(write_policy(tmp_path, policy_text(target)))
    lanes = contract_lanes(policy, CHAIN_ID, expires_at=NOW + 86400, call_limit=None)
    signed = companion.sign_grant(
        MAIN,
        lanes,
        session_address=SESSION,
        chain_id=CHAIN_ID,
        manager=MANAGER,
        enforcers=ENFORCER_ADDRESSES,
        salt=3,
    )
    with pytest.raises(GrantError, match="may not call"):
        verify_grant(
            signed,
            chain_id=CHAIN_ID,
            contracts=CONTRACTS,
            policy=policy,
            delegate=SESSION,
            not_after=NOW + 86400,
        )


def test_the_canonical_deployment_names_every_enforcer_a_grant_can_use():
    from bot.devcontracts import CANONICAL_V1_3_0

    assert set(CANONICAL_V1_3_0["enforcers"]) == set(ENFORCERS)


widenings = st.one_of(
    st.integers(1, 10**24).map(lambda k: {"value_lte": 5 * MILLI + k}),
    st.sampled_from(["0x87654321", "0xa9059cbb", "0x095ea7b3", "0xcf092995"]).map(
        lambda s: {"selectors": (bytes.fromhex(SELECTOR[2:]), bytes.fromhex(s[2:]))}
    ),
    st.sampled_from([OTHER, "0x" + "77" * 20]).map(lambda t: {"targets": (t,)}),
    st.integers(1, 10**6).map(lambda k: {"expires_at": NOW + 86400 + k}),
    st.just({"call_limit": None}),
)


@settings(max_examples=60, deadline=None)
@given(widenings)
def test_a_contract_lane_wider_than_the_policy_is_refused(tmp_path_factory, change):
    policy = load_policy(write_policy(tmp_path_factory.mktemp("p"), policy_text(SINK)))
    (lane,) = contract_lanes(policy, CHAIN_ID, expires_at=NOW + 86400, call_limit=3)
    wider = dataclasses.replace(lane, **change)
    with pytest.raises(GrantError):
        check_lane(wider, policy, CHAIN_ID, not_after=NOW + 86400)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 5 * MILLI), st.integers(1, 86400))
def test_a_narrower_contract_lane_is_accepted(tmp_path_factory, value, shorter):
    policy = load_policy(write_policy(tmp_path_factory.mktemp("p"), policy_text(SINK)))
    (lane,) = contract_lanes(policy, CHAIN_ID, expires_at=NOW + 86400, call_limit=3)
    check_lane(
        dataclasses.replace(lane, value_lte=value, expires_at=NOW + 86400 - shorter),
        policy,
        CHAIN_ID,
        not_after=NOW + 86400,
    )


# ---- on anvil, real bytecode ------------------------------------------------------------------------

# init code returning the 1-byte runtime STOP: every call succeeds, with any calldata and any value, so a
# refusal can only come from the enforcers.
SINK_INIT = "0x6001600c60003960016000f300"


def deploy_sink(chain) -> str:
    deployer = rpc(chain.url, "eth_accounts")[0]
    return wait_receipt(
        chain, rpc(chain.url, "eth_sendTransaction", [{"from": deployer, "data": SINK_INIT}])
    )["contractAddress"].lower()


def call(stack, token, to: str, data: str, value: int = 0) -> dict:
    return stack.call_sync(
        token,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": CHAIN_ID, "to": to, "value": str(value), "data": data},
        },
    )


def grant(stack, chain, main, session: str, lanes, salt: int) -> dict:
    delegations = companion.sign_grant(
        main.key,
        lanes,
        session_address=session,
        chain_id=CHAIN_ID,
        manager=chain.contracts["manager"],
        enforcers=chain.contracts["enforcers"],
        salt=salt,
    )
    stack.call_sync(
        stack.admin_token,
        "tier3.grant",
        {
            "idempotency_key": new_idempotency_key("t"),
            "chain_id": CHAIN_ID,
            "delegations": [d.to_json() for d in delegations],
        },
    )
    return dict(
        zip((lane.targets[0] if lane.asset == CONTRACT else lane.asset for lane in lanes), delegations)
    )


@pytest.mark.chain
@pytest.mark.slow
def test_contract_lane_on_chain_bounds_the_stolen_key_and_carries_the_normal_path(
    make_stack, chain3, tmp_path
):
    sink, other, third = deploy_sink(chain3), deploy_sink(chain3), deploy_sink(chain3)
    text = policy_text(sink, second=True).replace(
        "opaque_calls:",
        f'opaque_calls:\n  - {{chain: 31337, address: "{third}", selector: "{SELECTOR}", max_value: "0"}}',
    )
    # The sink is also in the address book: the policy then allows value sent with its call.
    text = text.replace(
        "address_book:", f'address_book:\n  - {{chain: 31337, address: "{sink}", name: "sink"}}'
    )
    policy_path = write_policy(tmp_path, text)
    policy = load_policy(policy_path)
    stack = tier3_stack(make_stack, chain3, policy=policy_path)
    main = new_main_account(chain3)
    key = stack.funded_session_key()
    now = chain_time(chain3)
    lanes = derive_lanes(policy, CHAIN_ID, expires_at=now + 86400, nonce=0, start=now, call_limit=5)

    # A contract lane wider than the policy (one more selector) is refused by the signer.
    wide = [
        dataclasses.replace(lane, selectors=(*lane.selectors, b"\x87\x65\x43\x21"))
        if lane.asset == CONTRACT
        else lane
        for lane in lanes
    ]
    with pytest.raises(SignerError, match="0x87654321 on .* is not a call the policy allows"):
        grant(stack, chain3, main, key["address"], wide, salt=1)

    # The grant the test uses is narrower than the policy: only SELECTOR on the sink, at most 0.001 ETH per
    # call (the policy allows 0.005), and no lane for third.
    narrow = [
        dataclasses.replace(lane, selectors=(bytes.fromhex(SELECTOR[2:]),), value_lte=MILLI)
        if lane.asset == CONTRACT
        else lane
        for lane in lanes
        if lane.targets != (third,)
    ]
    delegations = grant(stack, chain3, main, key["address"], narrow, salt=2)
    token = stack.client_token("bot")

    # The normal path: an allowed call is signed and lands through redeemDelegations.
    ok = call(stack, token, sink, SELECTOR + "00" * 4)
    assert ok["status"] == "signed", ok
    receipt = wait_receipt(chain3, ok["tx_hash"])
    assert receipt["status"] == "0x1" and receipt["to"] == chain3.contracts["manager"]
    sink0, main0 = balance(chain3, sink), balance(chain3, main.address)
    ok = call(stack, token, sink, SELECTOR, MILLI)  # with value, within the lane's bound
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok
    assert balance(chain3, sink) - sink0 == MILLI and main0 - balance(chain3, main.address) == MILLI

    # The policy allows SECOND; the grant does not: the signer refuses before broadcast, naming the rule.
    session_nonce = nonce(chain3, key["address"])
    denied = call(stack, token, sink, SECOND)
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.allowed_methods", denied
    denied = call(stack, token, third, SELECTOR)  # the policy allows it; the grant has no lane for it
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.allowed_targets", denied
    denied = call(
        stack, token, sink, SELECTOR, 2 * MILLI
    )  # the policy allows it; the lane's ValueLte does not
    assert denied["status"] != "signed" and denied["rule_id"] == "onchain.value_lte", denied
    assert nonce(chain3, key["address"]) == session_nonce

    # The host is stolen: the session key against the DelegationManager directly.
    stolen = steal_session_key(stack, key["key_id"])
    lane = delegations[sink]
    main0, sink0, other0 = balance(chain3, main.address), balance(chain3, sink), balance(chain3, other)
    status, reason = attack(chain3, stolen, lane, sink, 0, bytes.fromhex(SECOND[2:]))  # another selector
    assert status == "0x0" and "AllowedMethodsEnforcer:method-not-allowed" in reason
    status, reason = attack(chain3, stolen, lane, other, 0, bytes.fromhex(SELECTOR[2:]))  # another contract
    assert status == "0x0" and "AllowedTargetsEnforcer:target-address-not-allowed" in reason
    status, reason = attack(
        chain3, stolen, lane, sink, MILLI + 1, bytes.fromhex(SELECTOR[2:])
    )  # over the bound
    assert status == "0x0" and "ValueLteEnforcer:value-too-high" in reason
    status, reason = attack(chain3, stolen, lane, sink, 0, b"")  # no selector at all
    assert status == "0x0" and "AllowedMethodsEnforcer" in reason
    assert (balance(chain3, main.address), balance(chain3, sink), balance(chain3, other)) == (
        main0,
        sink0,
        other0,
    )
    # Within the bound the attacker can send exactly the per-call value, no more, and the count ends it.
    for _ in range(3):  # the signer's calls used two of five
        assert attack(chain3, stolen, lane, sink, MILLI, bytes.fromhex(SELECTOR[2:]))[0] == "0x1"
    status, reason = attack(chain3, stolen, lane, sink, 0, bytes.fromhex(SELECTOR[2:]))
    assert status == "0x0" and "LimitedCallsEnforcer:limit-exceeded" in reason
    assert balance(chain3, sink) - sink0 == 3 * MILLI and main0 - balance(chain3, main.address) == 3 * MILLI
    status_rows = stack.call_sync(stack.admin_token, "tier3.status")["grants"][0]["lanes"]
    contract_row = next(r for r in status_rows if r["asset"] == CONTRACT)
    assert contract_row["calls_left"] == 0 and contract_row["selectors"] == [SELECTOR]


@pytest.mark.chain
@pytest.mark.slow
def test_wallet_grant_shows_and_signs_the_contract_lanes(make_stack, chain3, tmp_path):
    from policies.kernel.files import write_private_file
    from tests.tier3.conftest import fund

    sink = deploy_sink(chain3)
    router = deploy_sink(chain3)
    contracts = f'[{{chain: 31337, address: "{router}", name: "router", selectors: ["{MULTICALL}"]}}]'
    stack = tier3_stack(
        make_stack, chain3, policy=write_policy(tmp_path, policy_text(sink, contracts=contracts))
    )
    passfile = tmp_path / "main.pass"
    write_private_file(passfile, b"main key passphrase for tests")
    companion_dir = tmp_path / "companion"
    made = stack.owlia(
        "companion",
        "init",
        "--dir",
        str(companion_dir),
        "--passphrase-file",
        str(passfile),
        "--scrypt-n",
        "1024",
    )
    assert made.returncode == 0, made.stderr
    import json

    main = json.loads((companion_dir / "companion.json").read_text())["main_address"]
    fund(chain3, main, 10**18)
    stack.funded_session_key()

    def wallet(*args: str):
        return stack.owlia(
            "wallet", *args, "--dir", str(companion_dir), "--passphrase-file", str(passfile), "--yes"
        )

    assert wallet("authorize").returncode == 0
    granted = wallet("grant", "--days", "2", "--max-calls", "3")
    assert granted.returncode == 0, granted.stdout + granted.stderr
    assert (
        f"this key may call multicall() ({MULTICALL}) on router ({router}) with at most 0 ETH per call"
        in granted.stdout
    )
    assert f"this key may call {SELECTOR} on {sink} with at most 0.005 ETH per call" in granted.stdout
    shown = stack.owlia("wallet", "status", "--dir", str(companion_dir))
    assert shown.returncode == 0 and "no period (bounded per call), 3 transactions left" in shown.stdout, (
        shown.stdout + shown.stderr
    )
    token = stack.client_token("bot")
    ok = call(stack, token, router, MULTICALL + "00" * 31 + "20" + "00" * 32)  # multicall([]): no inner calls
    assert ok["status"] == "signed", ok
    assert wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1"
