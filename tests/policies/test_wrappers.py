"""Attacks: an approval, a transfer or an undecoded call hidden inside every wrapper ABI the signer knows.

The wrapper's own contract is allow-listed for the wrapper's selector (the setup that once signed
an ERC-7579 `execute` carrying an unlimited approve as `contract.allowed`): what is inside must
still be found and judged as if it were sent on its own.
"""

from __future__ import annotations

import pytest
from eth_abi import encode
from hypothesis import HealthCheck, given, settings, strategies as st

from policies import decode as d
from policies.context import EvalContext
from policies.decision import Outcome
from policies.decode import decode, encode_erc20_transfer
from policies.evaluate import evaluate
from policies.intent import Call
from policies.loader import PolicyError, parse_policy
from tests.policies.wrappers import (
    VALUE_CARRYING,
    WRAPPER_SELECTORS,
    WRAPPERS,
    Inner,
    batch_executions,
    call_data,
    mode,
    sel,
    single_execution,
)

CHAIN = 31337
ACCOUNT = "0x" + "ac" * 20  # the smart account / Multicall3 / Safe the wrapper is sent to
USDC = "0x" + "aa" * 20
FRIEND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
SPENDER = "0x000000000022d473030f116ddee9f6b43ac78ba3"
OPAQUE_TARGET = "0x" + "0b" * 20
OPAQUE_SELECTOR = "0x12345678"
USDC_PER_TX = 100 * 10**6
ETH_PER_TX = 10**16
MAX = 2**256 - 1
A, E, D = Outcome.ALLOW, Outcome.ESCALATE, Outcome.DENY

POLICY = f"""
version: 1
chains: [{{id: {CHAIN}, name: anvil}}]
assets:
  - {{chain: {CHAIN}, asset: native, symbol: ETH, decimals: 18, per_tx: "0.01", windows: {{24h: "0.05"}}}}
  - {{chain: {CHAIN}, asset: "{USDC}", symbol: USDC, decimals: 6, per_tx: "100", windows: {{24h: "500"}}}}
address_book:
  - {{chain: {CHAIN}, address: "{FRIEND}", name: friend}}
  - {{chain: {CHAIN}, address: "{ACCOUNT}", name: my-account}}
spenders: [{{chain: {CHAIN}, address: "{SPENDER}", name: permit2}}]
contracts:
  - {{chain: {CHAIN}, address: "{ACCOUNT}", name: account, selectors: [{", ".join(f'"{s}"' for s in WRAPPER_SELECTORS)}]}}
  - {{chain: {CHAIN}, address: "{OPAQUE_TARGET}", name: router, selectors: []}}
over_limit: deny
"""
OPAQUE = f'opaque_calls: [{{chain: {CHAIN}, address: "{OPAQUE_TARGET}", selector: "{OPAQUE_SELECTOR}", max_value: "0"}}]\n'
POLICY_OBJ = parse_policy(POLICY)
POLICY_OPAQUE = parse_policy(POLICY + OPAQUE)


def ctx(**kw) -> EvalContext:
    return EvalContext(
        **{"now": 1000.0, "session_key_expires_at": 10**9, "seen_recipients": frozenset({ACCOUNT}), **kw}
    )


def decide(data: bytes, value: int = 0, policy=POLICY_OBJ, context: EvalContext | None = None):
    return evaluate(policy, decode(Call(CHAIN, ACCOUNT, value, data)), context or ctx())


def rule_ids(decision) -> dict[str, Outcome]:
    return {f.rule_id: f.outcome for f in decision.findings}


def approve(spender: str, amount: int) -> bytes:
    return call_data("approve(address,uint256)", ["address", "uint256"], spender, amount)


def inner_calls(name: str, hidden: Inner) -> list[Inner]:
    """The hidden call alone for single-call wrappers, after an innocent one for batches."""
    if getattr(WRAPPERS[name], "single"):
        return [hidden]
    return [(USDC, 0, encode_erc20_transfer(FRIEND, 1)), hidden]


NAMES = sorted(WRAPPERS)


def test_every_wrapper_selector_is_decoded_and_equals_keccak_of_its_signature():
    for name in NAMES:
        selector = WRAPPERS[name]([(FRIEND, 0, b"")])[:4]
        known = d.KNOWN.get(selector)
        assert known is not None, name
        assert sel(known.signature) == selector
    assert d.ERC7579_EXECUTE.hex() == "e9ae5c53" and d.MC3_AGGREGATE3.hex() == "82ad56cb"
    for selector, known in d.KNOWN.items():
        assert sel(known.signature) == selector, known.signature
    named = [v for k, v in vars(d).items() if isinstance(v, bytes) and len(v) == 4 and k.isupper()]
    assert set(named) <= set(d.KNOWN), "every selector constant has a handler"


@pytest.mark.parametrize("name", NAMES)
def test_a_wrapped_innocent_transfer_is_signed(name):
    decision = decide(WRAPPERS[name]([(USDC, 0, encode_erc20_transfer(FRIEND, 5))]))
    assert decision.outcome is A, decision.findings


@pytest.mark.parametrize("name", NAMES)
def test_hidden_unlimited_approve_is_denied(name):
    decision = decide(WRAPPERS[name](inner_calls(name, (USDC, 0, approve(SPENDER, MAX)))))
    assert decision.outcome is D and rule_ids(decision)["approval.unlimited"] is D, decision.findings


@pytest.mark.parametrize("name", NAMES)
def test_hidden_approve_to_a_stranger_is_denied(name):
    decision = decide(WRAPPERS[name](inner_calls(name, (USDC, 0, approve("0x" + "66" * 20, 1)))))
    assert rule_ids(decision)["approval.spender_not_allowed"] is D


@pytest.mark.parametrize("name", NAMES)
def test_hidden_over_limit_token_transfer_is_denied(name):
    decision = decide(
        WRAPPERS[name](inner_calls(name, (USDC, 0, encode_erc20_transfer(FRIEND, USDC_PER_TX + 1))))
    )
    assert decision.outcome is D and rule_ids(decision)["limit.per_tx"] is D, decision.findings


@pytest.mark.parametrize("name", sorted(VALUE_CARRYING))
def test_hidden_over_limit_native_transfer_is_denied(name):
    decision = decide(WRAPPERS[name](inner_calls(name, (FRIEND, ETH_PER_TX + 1, b""))))
    assert decision.outcome is D and rule_ids(decision)["limit.per_tx"] is D, decision.findings


@pytest.mark.parametrize("name", NAMES)
def test_hidden_payment_to_a_lookalike_of_a_known_address_is_denied(name):
    lookalike = FRIEND[:6] + "00" * 16 + FRIEND[-4:]
    decision = decide(WRAPPERS[name](inner_calls(name, (USDC, 0, encode_erc20_transfer(lookalike, 1)))))
    assert decision.outcome is D and rule_ids(decision)["recipient.lookalike"] is D


@pytest.mark.parametrize("name", NAMES)
def test_wrapped_transfers_count_against_the_window(name):
    spent = {(CHAIN, USDC, 86400): 450 * 10**6}
    decision = decide(
        WRAPPERS[name](inner_calls(name, (USDC, 0, encode_erc20_transfer(FRIEND, 51 * 10**6)))),
        context=ctx(spent=spent),
    )
    assert rule_ids(decision)["limit.window.24h"] is D


@pytest.mark.parametrize("name", NAMES)
def test_hidden_undecoded_call_is_denied_unless_named_opaque(name):
    hidden = (OPAQUE_TARGET, 0, bytes.fromhex(OPAQUE_SELECTOR[2:]) + b"\x00" * 32)
    data = WRAPPERS[name](inner_calls(name, hidden))
    denied = decide(data)
    assert denied.outcome is D and rule_ids(denied)["decode.opaque"] is D, denied.findings
    allowed = decide(data, policy=POLICY_OPAQUE)
    assert allowed.outcome is A and rule_ids(allowed)["opaque.allowed"] is A, allowed.findings


@pytest.mark.parametrize("name", sorted(VALUE_CARRYING))
def test_an_opaque_call_sending_more_than_its_bound_is_denied(name):
    hidden = (OPAQUE_TARGET, 1, bytes.fromhex(OPAQUE_SELECTOR[2:]))
    decision = decide(WRAPPERS[name](inner_calls(name, hidden)), policy=POLICY_OPAQUE)
    assert rule_ids(decision)["opaque.max_value"] is D


@pytest.mark.parametrize("name", NAMES)
def test_trailing_bytes_after_a_wrapper_are_refused(name):
    data = WRAPPERS[name]([(USDC, 0, encode_erc20_transfer(FRIEND, 5))])
    for tail in (b"\x00", b"\x00" * 32, b"\xff" * 32):
        assert rule_ids(decide(data + tail)).get("decode.malformed") is D, name


@pytest.mark.parametrize("name", NAMES)
def test_every_truncation_of_a_wrapper_is_refused(name):
    data = WRAPPERS[name]([(USDC, 0, approve(SPENDER, MAX))])
    for cut in range(4, len(data), 7):
        decision = decide(data[:cut])
        assert decision.outcome is D, (name, cut)


def test_the_reported_attack_erc7579_execute_with_an_unlimited_approve():
    router = parse_policy(POLICY.replace("selectors: []", 'selectors: ["0xe9ae5c53"]'))
    data = WRAPPERS["erc7579.execute.single"]([(USDC, 0, approve(SPENDER, MAX))])
    decision = evaluate(router, decode(Call(CHAIN, OPAQUE_TARGET, 0, data)), ctx())
    assert decision.outcome is D and decision.rule_id == "approval.unlimited"


def test_a_trailing_byte_on_an_inner_token_call_is_refused():
    data = WRAPPERS["coinbase.execute"]([(USDC, 0, encode_erc20_transfer(FRIEND, 5) + b"\x00")])
    assert rule_ids(decide(data))["decode.malformed"] is D


@pytest.mark.parametrize("function", ["execute", "executeFromExecutor"])
def test_erc7579_delegatecall_and_unknown_modes_are_refused(function):
    def send(m: bytes, payload: bytes) -> dict[str, Outcome]:
        return rule_ids(decide(call_data(f"{function}(bytes32,bytes)", ["bytes32", "bytes"], m, payload)))

    single = single_execution((USDC, 0, encode_erc20_transfer(FRIEND, 1)))
    assert send(mode(0xFF), bytes.fromhex(USDC[2:]) + b"\x12\x34\x56\x78")["forbidden.delegatecall"] is D
    assert send(mode(0xFF, 0x01), bytes.fromhex(USDC[2:]))["forbidden.delegatecall"] is D
    assert send(mode(0xFE), single)["decode.malformed"] is D  # staticcall: not a mode the signer reads
    assert send(mode(0x02), single)["decode.malformed"] is D
    assert send(mode(0x00, 0x02), single)["decode.malformed"] is D
    assert send(mode(0x00, 0x00, bytes(4) + b"\xee\xee\xee\xee" + bytes(22)), single)["decode.malformed"] is D
    assert send(mode(0x00), single[:51])["decode.malformed"] is D
    assert send(mode(0x01), single)["decode.malformed"] is D  # a packed single is not a batch


def test_kernel_v2_delegatecall_and_bad_operation():
    base = ["address", "uint256", "bytes", "uint8"]
    delegate = call_data("execute(address,uint256,bytes,uint8)", base, USDC, 0, b"", 1)
    assert rule_ids(decide(delegate))["forbidden.delegatecall"] is D
    bad = call_data("execute(address,uint256,bytes,uint8)", base, USDC, 0, b"", 2)
    assert rule_ids(decide(bad))["decode.malformed"] is D


def test_redeem_delegations_delegatecall_mode_and_mismatched_arrays():
    types = ["bytes[]", "bytes32[]", "bytes[]"]
    fn = "redeemDelegations(bytes[],bytes32[],bytes[])"
    ok = single_execution((USDC, 0, encode_erc20_transfer(FRIEND, 1)))
    delegate = call_data(fn, types, [b"", b""], [mode(0x00), mode(0xFF)], [ok, bytes.fromhex(USDC[2:])])
    assert rule_ids(decide(delegate))["forbidden.delegatecall"] is D
    mismatched = call_data(fn, types, [b""], [mode(0x00), mode(0x00)], [ok, ok])
    assert rule_ids(decide(mismatched))["decode.malformed"] is D
    batch = call_data(fn, types, [b""], [mode(0x01)], [batch_executions([(USDC, 0, approve(SPENDER, MAX))])])
    assert rule_ids(decide(batch))["approval.unlimited"] is D


def test_offsets_that_reuse_one_tail_are_refused():
    """Many array elements pointing at one large tail: refused before the work can balloon."""
    big = encode_erc20_transfer(FRIEND, 1) + b"\x00" * 4000
    honest = encode(["bytes[]"], [[big]])
    # bytes[] with 200 elements whose offsets all point at the single tail of `honest`
    n = 200
    head = (32).to_bytes(32, "big") + n.to_bytes(32, "big")
    tail_at = 32 * n
    offsets = b"".join((tail_at).to_bytes(32, "big") for _ in range(n))
    forged = head + offsets + honest[96:]
    actions = decode(Call(CHAIN, ACCOUNT, 0, d.MULTICALL + forged)).actions
    assert any(getattr(a, "rule_id", "") == "decode.malformed" for a in actions)


# ---- properties -------------------------------------------------------------------------------

NESTABLE = sorted(WRAPPERS)
leaves = st.one_of(
    st.integers(0, 2 * USDC_PER_TX).map(lambda n: ("transfer", n)),
    st.just(("opaque", 0)),
)


def _tree(children):
    return st.tuples(st.sampled_from(NESTABLE), st.lists(children, min_size=1, max_size=3))


trees = st.recursive(leaves, _tree, max_leaves=8)


def _build(node) -> tuple[Inner, int, bool]:
    """(call, USDC total inside, whether an undecoded call is inside) for a random tree."""
    if node[0] == "transfer":
        return (USDC, 0, encode_erc20_transfer(FRIEND, node[1])), node[1], False
    if node[0] == "opaque":
        return (OPAQUE_TARGET, 0, bytes.fromhex(OPAQUE_SELECTOR[2:])), 0, True
    name, children = node
    built = [_build(c) for c in children]
    if getattr(WRAPPERS[name], "single"):
        built = built[:1]
    calls = [b[0] for b in built]
    return ((ACCOUNT, 0, WRAPPERS[name](calls)), sum(b[1] for b in built), any(b[2] for b in built))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees, st.integers(0, 500 * 10**6))
def test_no_nesting_of_wrappers_lets_a_transfer_past_the_limits_or_an_undecoded_call_through(tree, already):
    (to, value, data), total, opaque = _build(tree)
    decision = evaluate(
        POLICY_OBJ, decode(Call(CHAIN, to, value, data)), ctx(spent={(CHAIN, USDC, 86400): already})
    )
    if decision.outcome is A:
        assert total <= USDC_PER_TX and already + total <= 500 * 10**6
        assert not opaque
    spent = sum(s.amount for s in decision.spends if s.asset == USDC)
    assert spent >= total or decision.outcome is D  # a decoded request counts everything it moves
    if opaque:
        assert decision.outcome is D


def test_opaque_calls_are_validated():
    good = POLICY + OPAQUE
    assert parse_policy(good).index.opaque_max_value(CHAIN, OPAQUE_TARGET, bytes.fromhex("12345678")) == 0
    cases = {
        "known": OPAQUE.replace(OPAQUE_SELECTOR, "0xa9059cbb"),
        "chain": OPAQUE.replace(f"chain: {CHAIN}", "chain: 5"),
        "precision": OPAQUE.replace('"0"', '"0.0000000000000000001"'),
        "twice": OPAQUE.replace("}]", "}, " + OPAQUE[len("opaque_calls: [") : -2] + "]"),
        "extra": OPAQUE.replace("max_value", "name: x, max_value"),
        "selector": OPAQUE.replace(OPAQUE_SELECTOR, "0x1234"),
    }
    for why, extra in cases.items():
        with pytest.raises(PolicyError) as info:
            parse_policy(POLICY + extra)
        assert "opaque_calls" in str(info.value), (why, str(info.value))
    with pytest.raises(PolicyError, match="transfer\\(address,uint256\\), which the signer decodes"):
        parse_policy(POLICY + cases["known"])


def test_a_policy_without_opaque_calls_keeps_its_hash():
    import hashlib
    import json

    dumped = POLICY_OBJ.model_dump(mode="json")
    del dumped["opaque_calls"]
    del dumped["swaps"]  # added later still: absent from the hash of a policy without it
    del dumped["claims"]
    expected = hashlib.sha256(json.dumps(dumped, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert POLICY_OBJ.policy_hash() == expected
    assert POLICY_OPAQUE.policy_hash() != expected
