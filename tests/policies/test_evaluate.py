from dataclasses import replace

import pytest
from eth_abi import encode

from policies.context import EvalContext, PriceQuote
from policies.decision import Outcome, Spend
from policies.decode import decode, encode_erc20_transfer, selector_of
from policies.evaluate import evaluate
from policies.intent import NATIVE, Approval, Call, ContractCall, Decoded, Flag
from policies.loader import parse_policy

CHAIN = 31337
FRIEND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
FRIEND_LOOKALIKE = "0x7099" + "00" * 16 + "79c8"
STRANGER = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
USDC = "0x" + "aa" * 20
NOLIM = "0x" + "bb" * 20
UNKNOWN_TOKEN = "0x" + "cc" * 20
SPENDER = "0x000000000022d473030f116ddee9f6b43ac78ba3"
SPENDER_LOOKALIKE = "0x0000" + "11" * 16 + "8ba3"
ROUTER = "0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad"
SAFE = "0x" + "5a" * 20
SWAP = "0x3593564c"  # UniversalRouter execute(bytes,bytes[],uint256): not decoded by the signer
MULTICALL = "0xac9650d8"
ETH = 10**18
MAX = 2**256 - 1

POLICY = f"""
version: 1
chains: [{{id: {CHAIN}, name: anvil}}]
assets:
  - {{chain: {CHAIN}, asset: native, symbol: ETH, decimals: 18, per_tx: "0.01", windows: {{24h: "0.05", 7d: "0.2"}},
     price_usd: "3000"}}
  - {{chain: {CHAIN}, asset: "{USDC}", symbol: USDC, decimals: 6, per_tx: "100", windows: {{24h: "500"}}}}
  - {{chain: {CHAIN}, asset: "{NOLIM}", symbol: NOL, decimals: 0}}
address_book: [{{chain: {CHAIN}, address: "{FRIEND}", name: dev-friend}}]
spenders: [{{chain: {CHAIN}, address: "{SPENDER}", name: permit2}}]
contracts: [{{chain: {CHAIN}, address: "{ROUTER}", name: router, selectors: ["{SWAP}", "{MULTICALL}"]}}]
"""
USD = 'usd: {per_tx: "100", windows: {24h: "150"}}\n'
OPAQUE = f'opaque_calls: [{{chain: {CHAIN}, address: "{ROUTER}", selector: "{SWAP}", max_value: "0.01"}}]\n'


def policy(extra: str = ""):
    return parse_policy(POLICY + extra)


def ctx(**kw) -> EvalContext:
    return EvalContext(**{"now": 1000.0, "session_key_expires_at": 10**9, **kw})


def call(to: str = FRIEND, value: int = 0, data: bytes = b"", **kw) -> Call:
    return Call(CHAIN, to, value, data, **kw)


def abi(signature: str, types: list[str], *args) -> bytes:
    return selector_of(signature) + encode(types, list(args))


def approve(spender: str, amount: int) -> bytes:
    return abi("approve(address,uint256)", ["address", "uint256"], spender, amount)


def multicall(*inner: bytes, selector: str = "multicall(bytes[])") -> bytes:
    if selector == "multicall(uint256,bytes[])":
        return abi(selector, ["uint256", "bytes[]"], 0, list(inner))
    return abi(selector, ["bytes[]"], list(inner))


def exec_tx(to: str, value: int, data: bytes) -> bytes:
    return abi(
        "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
        [
            "address",
            "uint256",
            "bytes",
            "uint8",
            "uint256",
            "uint256",
            "uint256",
            "address",
            "address",
            "bytes",
        ],
        to,
        value,
        data,
        0,
        0,
        0,
        0,
        "0x" + "00" * 20,
        "0x" + "00" * 20,
        b"",
    )


def decide(c: Call, p=None, context: EvalContext | None = None):
    return evaluate(p or policy(), decode(c), context or ctx())


def found(decision) -> dict[str, Outcome]:
    return {f.rule_id: f.outcome for f in decision.findings}


A, E, D = Outcome.ALLOW, Outcome.ESCALATE, Outcome.DENY
CENT = ETH // 100

CASES = [
    # (rule id, expected outcome of that finding, call, policy extra, context overrides)
    ("signer.frozen", D, call(value=1), "", {"frozen": True}),
    ("chain.unknown", D, Call(1, FRIEND, 1), "", {}),
    ("request.empty", D, call(), "", {}),
    ("forbidden.eip7702", D, call(value=1, authorization_list=True), "", {}),
    ("forbidden.raw_hash", D, call(value=1, raw_hash_signature=True), "", {}),
    ("decode.malformed", D, call(to=USDC, data=b"\xa9\x05"), "", {}),
    ("session_key.missing", E, call(value=1), "", {"session_key_expires_at": None}),
    ("session_key.expired", E, call(value=1), "", {"session_key_expires_at": 1000.0}),
    ("source.heartbeat", D, call(value=1, flags=frozenset({Flag.FROM_HEARTBEAT})), "", {}),
    ("source.skill", E, call(value=1, flags=frozenset({Flag.FROM_SKILL})), "", {}),
    ("asset.unknown", E, call(to=UNKNOWN_TOKEN, data=encode_erc20_transfer(FRIEND, 1)), "", {}),
    ("asset.no_limits", E, call(to=NOLIM, data=encode_erc20_transfer(FRIEND, 1)), "", {}),
    ("limit.per_tx", E, call(value=CENT + 1), "", {}),
    ("limit.window.24h", E, call(value=CENT), "", {"spent": {(CHAIN, NATIVE, 86400): 5 * CENT}}),
    ("limit.window.7d", E, call(value=CENT), "", {"spent": {(CHAIN, NATIVE, 604800): 20 * CENT}}),
    ("asset.within_limits", A, call(value=CENT), "", {"spent": {(CHAIN, NATIVE, 86400): 4 * CENT}}),
    ("approval.revoke", A, call(to=USDC, data=approve(STRANGER, 0)), "", {}),
    ("approval.unlimited", D, call(to=USDC, data=approve(SPENDER, MAX)), "", {}),
    ("approval.spender_allowed", A, call(to=USDC, data=approve(SPENDER, 10**6)), "", {}),
    ("approval.spender_lookalike", D, call(to=USDC, data=approve(SPENDER_LOOKALIKE, 1)), "", {}),
    ("approval.spender_not_allowed", D, call(to=USDC, data=approve(STRANGER, 1)), "", {}),
    ("recipient.known", A, call(value=1), "", {}),
    ("recipient.lookalike", D, call(to=FRIEND_LOOKALIKE, value=1), "", {}),
    (
        "recipient.untrusted_provenance",
        E,
        call(to=STRANGER, value=1, flags=frozenset({Flag.RECIPIENT_FROM_UNTRUSTED})),
        "",
        {},
    ),
    ("recipient.new", E, call(to=STRANGER, value=1), "", {}),
    ("contract.token_call", A, call(to=USDC, data=encode_erc20_transfer(FRIEND, 1)), "", {}),
    ("contract.allowed", A, call(to=ROUTER, data=multicall()), "", {}),
    (
        "contract.selector_not_allowed",
        E,
        call(to=ROUTER, data=multicall(b"", selector="multicall(uint256,bytes[])")),
        "",
        {},
    ),
    ("contract.not_allowed", E, call(to=STRANGER, data=multicall()), "", {}),
    # A listed selector the signer does not decode is still denied: its arguments could do anything.
    ("decode.opaque", D, call(to=ROUTER, data=bytes.fromhex(SWAP[2:]) + b"\x00" * 32), "", {}),
    (
        "opaque.allowed",
        A,
        call(to=ROUTER, value=CENT, data=bytes.fromhex(SWAP[2:]) + b"\x00" * 32),
        OPAQUE,
        {},
    ),
    ("opaque.max_value", D, call(to=ROUTER, value=CENT + 1, data=bytes.fromhex(SWAP[2:])), OPAQUE, {}),
    ("usd.price_unknown", E, call(to=USDC, data=encode_erc20_transfer(FRIEND, 1)), USD, {}),
    (
        "usd.per_tx",
        E,
        call(to=USDC, data=encode_erc20_transfer(FRIEND, 10**6)),
        USD,
        {"prices": {(CHAIN, USDC): PriceQuote(200 * 10**6, 6)}},
    ),
    ("usd.window.24h", E, call(value=CENT), USD, {"spent_usd": {86400: 121 * 10**6}}),
    ("usd.within_limits", A, call(value=CENT), USD, {"spent_usd": {86400: 120 * 10**6}}),
    ("rate.tx_per_hour", E, call(value=1), "", {"tx_count": {3600: 30}}),
    ("rate.new_recipients_per_day", E, call(to=STRANGER, value=1), "", {"new_recipients": {86400: 5}}),
]


@pytest.mark.parametrize(
    ("rule_id", "outcome", "the_call", "extra", "overrides"), CASES, ids=[c[0] for c in CASES]
)
def test_every_rule_is_reachable(rule_id, outcome, the_call, extra, overrides):
    decision = decide(the_call, policy(extra), ctx(**overrides))
    assert found(decision).get(rule_id) is outcome, decision.findings
    if outcome is not A:
        assert decision.outcome.severity >= outcome.severity


def test_plain_transfer_to_friend_is_allowed_and_spends():
    decision = decide(call(value=CENT))
    assert decision.outcome is A
    assert decision.spends == (Spend(CHAIN, NATIVE, CENT, None),)
    assert decision.new_recipients == ()


def test_policy_switches_change_outcomes():
    deny = (
        "over_limit: deny\nrecipients: {unknown: deny, untrusted_provenance: deny}\n"
        "sources: {skill: policy, heartbeat: escalate}\n"
    )
    p = policy(deny)
    assert found(decide(call(value=CENT + 1), p))["limit.per_tx"] is D
    assert found(decide(call(to=STRANGER, value=1), p))["recipient.new"] is D
    untrusted = call(to=STRANGER, value=1, flags=frozenset({Flag.RECIPIENT_FROM_UNTRUSTED}))
    assert found(decide(untrusted, p))["recipient.untrusted_provenance"] is D
    assert found(decide(call(value=1, flags=frozenset({Flag.FROM_SKILL})), p))["source.skill"] is A
    assert found(decide(call(value=1, flags=frozenset({Flag.FROM_HEARTBEAT})), p))["source.heartbeat"] is E
    allow_new = policy("recipients: {unknown: allow}\n")
    decision = decide(call(to=STRANGER, value=1), allow_new)
    assert decision.outcome is A and decision.new_recipients == (STRANGER,)
    assert (
        decide(
            call(to=STRANGER, value=1), allow_new, ctx(seen_recipients=frozenset({STRANGER}))
        ).new_recipients
        == ()
    )


def test_most_restrictive_finding_wins():
    decision = decide(call(value=CENT + 1, flags=frozenset({Flag.FROM_HEARTBEAT})))
    assert (decision.outcome, decision.rule_id) == (D, "source.heartbeat")
    assert found(decision)["limit.per_tx"] is E and found(decision)["recipient.known"] is A


def test_window_reason_is_exact():
    decision = decide(call(value=5 * CENT), policy(), ctx(spent={(CHAIN, NATIVE, 86400): 5 * CENT}))
    reasons = {f.rule_id: f.reason for f in decision.findings}
    assert (
        reasons["limit.window.24h"]
        == "0.05 ETH would exceed the 24h limit of 0.05 ETH (0.05 ETH already spent)"
    )
    assert reasons["limit.per_tx"] == "0.05 ETH exceeds the per-transaction limit of 0.01 ETH"


def test_multicall_hiding_an_unlimited_approve_is_denied():
    data = multicall(encode_erc20_transfer(FRIEND, 1), approve(SPENDER, MAX))
    decision = decide(call(to=USDC, data=data))
    assert decision.outcome is D and decision.rule_id == "approval.unlimited"


def test_transfer_nested_in_exec_transaction_counts_against_limits():
    inner = exec_tx(FRIEND, CENT, b"")
    decision = decide(call(to=SAFE, data=inner), context=ctx(spent={(CHAIN, NATIVE, 86400): 5 * CENT}))
    assert found(decision)["limit.window.24h"] is E
    assert decision.spends == (Spend(CHAIN, NATIVE, CENT, None),)
    assert found(decision)["contract.not_allowed"] is E  # the wrapper target is not listed either


def test_spends_aggregate_per_asset_across_the_request():
    packed = b"".join(
        bytes([0]) + bytes.fromhex(FRIEND[2:]) + (CENT // 2).to_bytes(32, "big") + bytes(32) for _ in range(3)
    )
    data = abi("multiSend(bytes)", ["bytes"], packed)
    decision = decide(call(to=SAFE, value=0, data=data))
    assert decision.spends == (Spend(CHAIN, NATIVE, 3 * CENT // 2, None),)
    assert found(decision)["limit.per_tx"] is E


def test_lookalike_recipient_denied_and_counted_new():
    decision = decide(call(to=FRIEND_LOOKALIKE, value=1))
    assert (decision.outcome, decision.rule_id) == (D, "recipient.lookalike")
    assert decision.new_recipients == (FRIEND_LOOKALIKE,)


def test_price_unknown_escalates_and_spends_carry_usd():
    p = policy(USD)
    unknown = decide(call(to=USDC, data=encode_erc20_transfer(FRIEND, 10**6)), p)
    assert (unknown.outcome, unknown.rule_id) == (E, "usd.price_unknown")
    assert unknown.spends == (Spend(CHAIN, USDC, 10**6, None),)
    priced = decide(
        call(to=USDC, data=encode_erc20_transfer(FRIEND, 10**6)),
        p,
        ctx(prices={(CHAIN, USDC): PriceQuote(10**6, 6)}),
    )
    assert priced.outcome is A and priced.spends == (Spend(CHAIN, USDC, 10**6, 10**6),)
    static = decide(call(value=CENT), p)  # ETH falls back to the policy's static $3000
    assert static.outcome is A and static.spends[0].usd_micros == 30 * 10**6


def test_spends_reported_even_when_not_allowed():
    decision = decide(call(to=STRANGER, value=CENT))
    assert decision.outcome is E and decision.spends == (Spend(CHAIN, NATIVE, CENT, None),)


def test_unmatched_action_escalates_and_nothing_matches_denies():
    odd = Decoded(call(value=1), (object(),))  # type: ignore[arg-type]
    decision = evaluate(policy(), odd, ctx())
    assert found(decision)["default.unmatched"] is E
    decision = evaluate(policy(), Decoded(call(), ()), ctx())
    assert (decision.outcome, decision.rule_id) == (D, "request.empty")


def test_default_deny_when_no_finding_at_all():
    from policies.decision import Decision

    assert Decision.from_findings([]).rule_id == "default.deny"


def test_approval_is_spend_and_permit2_needs_listing():
    permit2_call = abi(
        "approve(address,address,uint160,uint48)",
        ["address", "address", "uint160", "uint48"],
        USDC,
        ROUTER,
        5 * 10**6,
        0,
    )
    decision = decide(call(to=SPENDER, data=permit2_call))
    assert found(decision)["contract.not_allowed"] is E
    assert found(decision)["approval.spender_not_allowed"] is D
    assert decision.spends == (Spend(CHAIN, USDC, 5 * 10**6, None),)


def test_each_action_gets_a_finding_next_to_an_allowed_one():
    decoded = Decoded(
        call(value=1),
        (
            *decode(call(value=1)).actions,
            ContractCall(CHAIN, STRANGER, b"\x00\x00\x00\x01", 1, 0, True),
            Approval(CHAIN, USDC, STRANGER, 1, "approve"),
        ),
    )
    decision = evaluate(policy(), decoded, ctx())
    assert decision.outcome is D and found(decision)["contract.not_allowed"] is E


def test_evaluate_is_deterministic():
    c = call(to=SAFE, data=multicall(encode_erc20_transfer(STRANGER, 1), approve(SPENDER, 2)))
    context = ctx(spent={(CHAIN, USDC, 86400): 3})
    assert decide(c, context=context) == decide(c, context=replace(context))


def test_an_unlimited_approve_names_the_token():
    decision = decide(call(to=USDC, data=approve(SPENDER, MAX)))
    [unlimited] = [f for f in decision.findings if f.rule_id == "approval.unlimited"]
    assert "USDC" in unlimited.reason and USDC.lower() in unlimited.reason.lower()
