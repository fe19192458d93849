"""The TypedDicts the Tier 1 code and the records are read through must describe the JSON built.

They type dicts that go on the wire or into the log unchanged (the companion hashes the approval
request as it was built), so nothing checks them at run time: mypy checks the code that reads them,
and this checks the builders against them, key for key and type for type, for every action kind, a
top-up and a policy loosening, and for outcomes and decision records of any content the types allow.
"""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest
from hypothesis import given, strategies as st

from policies.context import AssetChange, EvalContext, Simulated
from policies.decision import Decision, Finding, Outcome, Spend
from policies.intent import (
    NATIVE,
    Approval,
    Call,
    Claim,
    ContractCall,
    Decoded,
    Forbidden,
    RouterPayout,
    Swap,
    Transfer,
    Wrap,
)
from policies.loader import parse_policy
from signer import records
from signer.simulate import simulation_card
from signer.wire.approval_request import ApprovalRequestBody, MainTx, RequestBuilder, request_hash
from signer.wire.sign_replies import SignReply
from tests.conftest import DEV_POLICY

A = "0x" + "11" * 20
B = "0x" + "22" * 20
C = "0x" + "33" * 20


def conforms(value: Any, tp: Any, path: str = "$") -> None:
    """AssertionError naming the first place where `value` is not of `tp` (a TypedDict: its exact keys)."""
    if is_typeddict(tp):
        assert isinstance(value, dict), f"{path}: not an object"
        hints = get_type_hints(tp)
        missing = tp.__required_keys__ - value.keys()
        unknown = value.keys() - hints.keys()
        assert not missing, f"{path}: missing {sorted(missing)}"
        assert not unknown, f"{path}: not in {tp.__name__}: {sorted(unknown)}"
        for key, item in value.items():
            conforms(item, hints[key], f"{path}.{key}")
        return
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        problems = []
        for option in args:
            try:
                conforms(value, option, path)
                return
            except AssertionError as exc:
                problems.append(str(exc))
        raise AssertionError(f"{path}: none of {tp}: {problems}")
    if origin is Literal:
        assert value in args, f"{path}: {value!r} not in {args}"
    elif origin is list:
        assert isinstance(value, list), f"{path}: not a list"
        for i, item in enumerate(value):
            conforms(item, args[0], f"{path}[{i}]")
    elif origin is dict:
        assert isinstance(value, dict), f"{path}: not an object"
        for key, item in value.items():
            conforms(key, args[0], f"{path} key")
            conforms(item, args[1], f"{path}[{key!r}]")
    elif tp is None or tp is type(None):
        assert value is None, f"{path}: {value!r} is not null"
    elif tp is float:
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{path}: not a number"
    elif tp is int:
        assert isinstance(value, int) and not isinstance(value, bool), f"{path}: not an integer"
    elif tp in (str, bool):
        assert isinstance(value, tp), f"{path}: {value!r} is not {tp.__name__}"
    else:
        assert tp in (object, Any), f"{path}: no check for {tp}"


# Chain 1 with priced ETH, a listed ERC-20 (WETH) and a named address: the named, priced cards;
# C is listed nowhere: the base-units-only cards.
WETH = "0x" + "44" * 20
POLICY = parse_policy(
    DEV_POLICY.read_text()
    .replace("id: 31337", "id: 1")
    .replace("chain: 31337", "chain: 1")
    .replace(
        '    windows: {24h: "0.05", 7d: "0.2"}   # at most 0.05 ETH a day and 0.2 ETH a week\n',
        '    windows: {24h: "0.05", 7d: "0.2"}\n    price_usd: "3000"\n'
        f'  - {{chain: 1, asset: "{WETH}", symbol: WETH, decimals: 18}}\n',
    )
    .replace("0x70997970C51812dc3A010C7d01b50e0d17dc79C8", A)
)
ACTIONS = {
    "transfer": Transfer(1, NATIVE, A, 10**18),
    "transfer_unknown_token": Transfer(1, C, A, 5),
    "approval": Approval(1, C, B, 2**256 - 1, "approve"),
    "call": ContractCall(1, B, bytes.fromhex("a9059cbb"), 0, 7, True),
    "swap": Swap(1, B, WETH, C, 3000, A, 1_900_000_000, 10**18, 1, 0),
    "wrap": Wrap(1, WETH, 10**17, False),
    "unwrap": Wrap(1, WETH, 10**17, True),
    "payout": RouterPayout(1, B, NATIVE, None, "refundETH"),
    "payout_to": RouterPayout(1, B, C, A, "sweepToken"),
    "claim": Claim(1, B, 3, A, 99),
    "forbidden": Forbidden("call.delegatecall", "delegatecall is never signed"),
}
ESCALATED = Decision(
    Outcome.ESCALATE,
    "recipients.unknown",
    "a new recipient",
    (Finding(Outcome.ESCALATE, "recipients.unknown", "a new recipient"),),
)
MAIN_TX: MainTx = {
    "type": 2,
    "chain_id": 1,
    "from": A,
    "to": B,
    "value": "1",
    "data": "0x",
    "nonce": 4,
    "gas_limit": 21000,
    "max_fee_per_gas": "30",
    "max_priority_fee_per_gas": "1",
    "gas_simulated": True,
}


def _request(name: str, *, tx: MainTx | None = MAIN_TX) -> ApprovalRequestBody:
    action = ACTIONS[name]
    sim = Simulated((AssetChange(A, NATIVE, -5), AssetChange(A, C, 7)))
    return RequestBuilder(POLICY).build(
        request_id="req_" + "0" * 32,
        kind="sign",
        decoded=Decoded(Call(1, B, 0), (action,)),
        summary="a summary",
        decision=ESCALATED,
        agent_reason=None if name == "call" else "the agent says why",
        tx=tx,
        created_at=1_700_000_000.5,
        expires_at=1_700_000_300.5,
        simulation=simulation_card(sim, POLICY.index, 1),
    )


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_every_action_kind_builds_the_request_its_types_describe(name: str) -> None:
    body = _request(name)
    conforms(body, ApprovalRequestBody)
    conforms(_request(name, tx=None), ApprovalRequestBody)
    assert len(request_hash(body)) == 64


def test_the_cards_checked_include_named_priced_and_unknown_ones() -> None:
    known, unknown, swap = _request("transfer"), _request("transfer_unknown_token"), _request("swap")
    assert known["actions"][0] == {**known["actions"][0], "price_usd": "3000", "decimals": 18}
    assert known["actions"][0]["recipient"]["name"] == "dev-friend"
    assert "note" in unknown["actions"][0] and unknown["actions"][0]["symbol"] is None
    assert swap["actions"][0]["token_in"]["symbol"] == "WETH"
    assert swap["simulation"]["changes"][0]["symbol"] == "ETH"


def test_a_topup_and_a_policy_loosening_carry_their_own_cards() -> None:
    topup = _request("transfer")
    topup["session_key"] = {"key_id": "sk_1", "address": A, "balance_cap": str(10**18)}
    conforms(topup, ApprovalRequestBody)
    loosening: ApprovalRequestBody = {
        **_request("transfer", tx=None),
        "kind": "policy",
        "actions": [],
        "policy": {"from_hash": "ab" * 32, "to_hash": "cd" * 32, "widens": ["new chain 10"]},
    }
    conforms(loosening, ApprovalRequestBody)


def test_the_checker_sees_a_key_the_types_do_not_have() -> None:
    """Not vacuous: a field the builder added without its type, or one of the wrong type, fails."""
    body: Any = _request("swap")
    body["actions"][0]["slippage"] = "1%"
    with pytest.raises(AssertionError, match="slippage"):
        conforms(body, ApprovalRequestBody)
    wrong: Any = _request("transfer")
    wrong["tx"]["nonce"] = "4"
    with pytest.raises(AssertionError, match="nonce"):
        conforms(wrong, ApprovalRequestBody)


amounts = st.integers(min_value=0, max_value=2**256 - 1)
texts = st.text(max_size=40)
findings = st.builds(Finding, st.sampled_from(list(Outcome)), texts, texts)
decisions = st.builds(
    Decision,
    st.sampled_from(list(Outcome)),
    texts,
    texts,
    st.tuples(findings) | st.tuples(findings, findings),
    st.lists(st.builds(Spend, st.integers(0, 2**63), texts, amounts, st.none() | amounts), max_size=3).map(
        tuple
    ),
    st.lists(texts, max_size=3).map(tuple),
)


def test_every_outcome_field_is_one_the_reply_model_reads() -> None:
    """`sign.status` reads a stored outcome through SignReply, which forbids fields it does not have."""
    assert set(get_type_hints(records.SignOutcome)) <= set(SignReply.model_fields)


@given(decisions, st.sampled_from(["signed", "pending_approval", "denied", "failed"]), texts)
def test_an_outcome_is_what_its_type_says_and_what_a_client_reads(
    decision: Decision, status: str, summary: str
) -> None:
    signed = records.outcome(
        status,
        "req_1",
        decision,
        summary,
        tx_hash="0x" + "ab" * 32,
        chain_id=1,
        sender=A,
        nonce=3,
        broadcast=True,
    )
    conforms(signed, records.SignOutcome)
    assert set(signed) <= set(SignReply.model_fields)
    SignReply.model_validate(signed)  # the model every client reads it with, extra fields forbidden
    result, body = records.abandoned("req_1", decision, summary, "chain.max_fee", "too dear")
    conforms(result, records.SignOutcome)
    conforms(body, records.EndingRecord)
    conforms(records.decision_to_json(decision), records.DecisionRecord)


@given(st.sampled_from(sorted(ACTIONS)))
def test_decoded_actions_and_a_defi_context_are_recorded_as_typed(name: str) -> None:
    conforms(records.action_to_json(ACTIONS[name]), records.ActionRecord)
    ctx = EvalContext(
        now=1.5,
        payer=A,
        swap_quotes={(1, B, WETH, C, 3000, 10**18): None, (1, B, C, WETH, 500, 5): 7},
        simulation=Simulated((AssetChange(A, NATIVE, -5),), outflows=(AssetChange(A, NATIVE, -5),)),
    )
    record = records.context_to_json(ctx)
    conforms(record, records.ContextRecord)
    assert records.context_from_json(record) == ctx
