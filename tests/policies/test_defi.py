"""The swap rules, pure: every bound the signer enforces on a swap, wrap or unwrap, property-tested.

The quote, the payer and the simulation are inputs (the signer reads them from the chain, see
tests/defi for the same rules on a real market); here they are varied freely, including the values a
lying node could report.
"""

from __future__ import annotations

from dataclasses import replace

from eth_abi import encode
from hypothesis import given, settings, strategies as st

from policies.context import AssetChange, EvalContext, Simulated
from policies.decision import Outcome
from policies.decode import decode
from policies.defi import min_out_bound, quote_key
from policies.evaluate import evaluate
from policies.intent import NATIVE, Call
from policies.loader import PolicyError, parse_policy

CHAIN = 31337
ROUTER = "0x" + "5e" * 20
QUOTER = "0x" + "9a" * 20
WETH = "0x" + "e7" * 20
TUSD = "0x" + "75" * 20
FAKE_TUSD = "0x" + "76" * 20
PAYER = "0x" + "ab" * 20
DISTRIBUTOR = "0x" + "d1" * 20
OTHER = "0x" + "cd" * 20
NOW = 1_800_000_000
SWAP_TYPES = "(address,address,uint24,address,uint256,uint256,uint256,uint160)"
A, E, D = Outcome.ALLOW, Outcome.ESCALATE, Outcome.DENY
AMOUNT = 5 * 10**15
QUOTE = 15 * 10**18  # 15 TUSD for 0.005 ETH at $3000 / $1

POLICY_TEXT = f"""
version: 1
chains: [{{id: {CHAIN}, name: anvil}}]
assets:
  - {{chain: {CHAIN}, asset: native, symbol: ETH, decimals: 18, per_tx: "0.01", price_usd: "3000"}}
  - {{chain: {CHAIN}, asset: "{WETH}", symbol: WETH, decimals: 18, per_tx: "0.01", price_usd: "3000"}}
  - {{chain: {CHAIN}, asset: "{TUSD}", symbol: TUSD, decimals: 18, per_tx: "50", price_usd: "1"}}
swaps:
  routers: [{{chain: {CHAIN}, address: "{ROUTER}", quoter: "{QUOTER}", weth: "{WETH}", name: uniswap-v3}}]
  tokens_in: [{{chain: {CHAIN}, asset: native}}, {{chain: {CHAIN}, asset: "{TUSD}"}}]
  tokens_out: [{{chain: {CHAIN}, asset: "{TUSD}"}}, {{chain: {CHAIN}, asset: native}}]
  max_slippage_bps: 100
  max_price_impact_bps: 300
  max_deadline_seconds: 600
claims:
  distributors: [{{chain: {CHAIN}, address: "{DISTRIBUTOR}", token: "{TUSD}", name: airdrop}}]
"""
POLICY = parse_policy(POLICY_TEXT)


def swap_call(
    *,
    token_out: str = TUSD,
    recipient: str = PAYER,
    amount: int = AMOUNT,
    min_out: int = QUOTE * 995 // 1000,
    deadline: int = NOW + 120,
    limit: int = 0,
    to: str = ROUTER,
    value: int | None = None,
) -> Call:
    data = bytes.fromhex("414bf389") + encode(
        [SWAP_TYPES], [(WETH, token_out, 3000, recipient, deadline, amount, min_out, limit)]
    )
    return Call(CHAIN, to, amount if value is None else value, data)


def context(
    call: Call, quote: int | None = QUOTE, sim: Simulated | None = None, payer: str | None = PAYER
) -> EvalContext:
    decoded = decode(call)
    quotes = {quote_key(CHAIN, QUOTER, s): quote for s in decoded.swaps()}
    if sim is None:
        sim = simulated(AssetChange(PAYER, NATIVE, -call.value))
    return EvalContext(
        now=NOW, session_key_expires_at=NOW + 3600, payer=payer, swap_quotes=quotes, simulation=sim
    )


def simulated(*changes: AssetChange) -> Simulated:
    """A simulation whose every change is also a gross outflow when negative (no netting)."""
    return Simulated(changes, outflows=tuple(c for c in changes if c.delta < 0))


def decide(call: Call, **kw):
    return evaluate(POLICY, decode(call), context(call, **kw))


def fired(decision) -> set[str]:
    return {f.rule_id for f in decision.findings if f.outcome is not A}


def test_an_honest_swap_is_allowed_and_counts_its_eth():
    decision = decide(swap_call())
    assert decision.outcome is A, decision.findings
    assert [(s.asset, s.amount) for s in decision.spends] == [(NATIVE, AMOUNT)]


def test_each_rule_names_itself():
    cases = {
        "swap.recipient": swap_call(recipient=OTHER),
        "swap.token_out_not_listed": swap_call(token_out=FAKE_TUSD),
        "swap.deadline": swap_call(deadline=NOW + 601),
        "swap.price_limit": swap_call(limit=1),
        "swap.router_not_listed": swap_call(to=OTHER),
        "swap.router_lookalike": swap_call(to="0x5e5e" + "00" * 16 + "5e5e"),
        "swap.value_mismatch": swap_call(value=AMOUNT + 1),
    }
    for rule, call in cases.items():
        decision = decide(call)
        assert decision.outcome is D and rule in fired(decision), (rule, decision.findings)


def test_no_quote_no_payer_or_no_simulation_asks_the_owner():
    assert "swap.quote_unavailable" in fired(d := decide(swap_call(), quote=None)) and d.outcome is E
    assert "swap.payer_unknown" in fired(d := decide(swap_call(), payer=None)) and d.outcome is E
    reverted = decide(swap_call(), sim=Simulated(reverted=True, error="Too little received"))
    assert reverted.outcome is D and "simulation.reverted" in fired(reverted)


def test_an_undecoded_outflow_in_the_simulation_makes_it_stricter():
    sim = simulated(AssetChange(PAYER, NATIVE, -AMOUNT), AssetChange(PAYER, TUSD, -(10**18)))
    decision = decide(swap_call(), sim=sim)
    assert decision.outcome is E and "simulation.undecoded_outflow" in fired(decision)
    # an inflow claimed by the node relaxes nothing: a bad minimum stays denied
    generous = simulated(AssetChange(PAYER, NATIVE, -AMOUNT), AssetChange(PAYER, TUSD, 10**24))
    assert decide(swap_call(min_out=0), sim=generous).outcome is D


def test_a_policy_cannot_list_a_swap_token_it_gives_no_limits():
    bad = POLICY_TEXT.replace(
        f'tokens_out: [{{chain: {CHAIN}, asset: "{TUSD}"}}',
        f'tokens_out: [{{chain: {CHAIN}, asset: "{FAKE_TUSD}"}}',
    )
    try:
        parse_policy(bad)
    except PolicyError as exc:
        assert "swaps.tokens_out.0" in str(exc) and "not under assets" in str(exc)
    else:
        raise AssertionError("accepted a swap token outside assets")


@settings(max_examples=300, deadline=None)
@given(quote=st.integers(min_value=1, max_value=10**30), min_out=st.integers(min_value=0, max_value=10**30))
def test_the_minimum_is_never_below_the_quote_less_the_slippage(quote, min_out):
    """Whatever the quote (the true one, or a node's lie), an allowed swap's minimum is within the bound."""
    call = swap_call(min_out=min_out)
    decision = decide(call, quote=quote)
    if decision.outcome is A:
        assert min_out >= min_out_bound(quote, 100) and min_out * 10_000 >= quote * 9_900
    if min_out < min_out_bound(quote, 100):
        assert decision.outcome is D


@settings(max_examples=300, deadline=None)
@given(lie=st.integers(min_value=0, max_value=QUOTE), min_out=st.integers(min_value=0, max_value=QUOTE))
def test_a_node_that_under_quotes_cannot_get_a_minimum_below_the_policy_prices_signed(lie, min_out):
    """With no second endpoint, an under-quote makes the minimum the bot derives low; the policy's prices
    bound it: an allowed minimum is worth at least the input less max_price_impact_bps."""
    decision = decide(swap_call(min_out=min_out), quote=lie)
    if decision.outcome is A:
        usd_in = AMOUNT * 3000  # wei x $ per ETH
        assert min_out * 1 * 10_000 >= usd_in * (10_000 - 300)


@settings(max_examples=200, deadline=None)
@given(amount=st.integers(min_value=1, max_value=10**17))
def test_the_swap_input_counts_against_the_eth_limit(amount):
    call = swap_call(amount=amount, min_out=amount * 3000 * 995 // 1000)
    decision = decide(call, quote=amount * 3000, sim=simulated(AssetChange(PAYER, NATIVE, -amount)))
    assert (decision.outcome is A) == (amount <= 10**16), decision.findings
    if amount > 10**16:
        assert "limit.per_tx" in fired(decision)


def test_wrap_counts_eth_and_unwrap_counts_weth():
    wrap = Call(CHAIN, WETH, 10**15, bytes.fromhex("d0e30db0"))
    ctx = replace(
        context(wrap),
        simulation=simulated(AssetChange(PAYER, NATIVE, -(10**15)), AssetChange(PAYER, WETH, 10**15)),
    )
    decision = evaluate(POLICY, decode(wrap), ctx)
    assert decision.outcome is A and [(s.asset, s.amount) for s in decision.spends] == [(NATIVE, 10**15)]
    unwrap = Call(CHAIN, WETH, 0, bytes.fromhex("2e1a7d4d") + (2 * 10**16).to_bytes(32, "big"))
    ctx = replace(context(unwrap), simulation=simulated(AssetChange(PAYER, WETH, -2 * 10**16)))
    decision = evaluate(POLICY, decode(unwrap), ctx)
    assert decision.outcome is E and "limit.per_tx" in fired(decision)  # 0.02 WETH over its 0.01


def test_the_summary_says_the_swap_in_one_clause_and_names_the_session_key():
    from signer.summary import Summarizer

    summarize = Summarizer(POLICY)
    line = summarize(decode(swap_call()), PAYER)
    assert line.startswith("swap 0.005 ETH for at least 14.925 TUSD via uniswap-v3 (")
    assert f"output to the session key ({PAYER})" in line and "selector" not in line and "send " not in line
    assert f"output to {OTHER} (new address)" in summarize(decode(swap_call(recipient=OTHER)), PAYER)
    wrap = summarize(decode(Call(CHAIN, WETH, 10**15, bytes.fromhex("d0e30db0"))), PAYER)
    assert wrap.startswith(f"wrap 0.001 ETH at WETH of uniswap-v3 ({WETH})")


def claim_call(account: str = PAYER, to: str = DISTRIBUTOR) -> Call:
    data = bytes.fromhex("2e7ba6ef") + encode(
        ["uint256", "address", "uint256", "bytes32[]"], [3, account, 7 * 10**18, [b"\x11" * 32]]
    )
    return Call(CHAIN, to, 0, data)


def test_a_claim_pays_only_the_account_that_claims():
    ok = decide(claim_call(), sim=simulated(AssetChange(PAYER, TUSD, 7 * 10**18)))
    assert ok.outcome is A and "claim.checked" in {f.rule_id for f in ok.findings} and not ok.spends
    other = decide(claim_call(account=OTHER), sim=simulated())
    assert other.outcome is D and "claim.recipient" in fired(other)
    twin = decide(claim_call(to="0xd1d1" + "00" * 16 + "d1d1"), sim=simulated())
    assert twin.outcome is D and "claim.distributor_lookalike" in fired(twin)
    unknown = decide(claim_call(to="0x" + "0f" * 20), sim=simulated())
    assert unknown.outcome is E and "claim.distributor_not_listed" in fired(unknown)
    stealing = decide(
        claim_call(),
        sim=simulated(AssetChange(PAYER, TUSD, 7 * 10**18), AssetChange(PAYER, NATIVE, -(10**15))),
    )
    assert stealing.outcome is E and "simulation.undecoded_outflow" in fired(stealing)


def test_any_wider_swaps_or_claims_section_waits_for_the_owner():
    """signer.tier1.policy_change: a reload that adds or widens swaps or claims is a loosening."""
    from signer.tier1.policy_change import widenings

    def with_text(text: str):
        return parse_policy(text)

    base = POLICY_TEXT
    without = base[: base.index("swaps:")]
    assert widenings(with_text(without), POLICY) and any(
        "new swaps section" in w for w in widenings(with_text(without), POLICY)
    )
    assert any(
        "claims: distributor" in w
        for w in widenings(with_text(base.replace(base[base.index("claims:") :], "")), POLICY)
    )
    looser = base.replace("max_slippage_bps: 100", "max_slippage_bps: 500").replace(
        "max_deadline_seconds: 600", "max_deadline_seconds: 900"
    )
    assert {w.split(":")[0] for w in widenings(POLICY, with_text(looser))} == {
        "swaps.max_slippage_bps",
        "swaps.max_deadline_seconds",
    }
    more_out = base.replace(
        f'tokens_out: [{{chain: {CHAIN}, asset: "{TUSD}"}}',
        f'tokens_out: [{{chain: {CHAIN}, asset: "{TUSD}"}}, {{chain: {CHAIN}, asset: "{WETH}"}}',
    )
    assert any(w.startswith("swaps.tokens_out") for w in widenings(POLICY, with_text(more_out)))
    other_quoter = base.replace(f'quoter: "{QUOTER}"', f'quoter: "{OTHER}"')
    assert any("router uniswap-v3" in w for w in widenings(POLICY, with_text(other_quoter)))
    tighter = base.replace("max_slippage_bps: 100", "max_slippage_bps: 50")
    assert widenings(POLICY, with_text(tighter)) == [] and widenings(POLICY, with_text(without)) == []


@settings(max_examples=300, deadline=None)
@given(amount=st.integers(min_value=1, max_value=2**256 - 1))
def test_an_approval_to_the_router_is_signed_only_up_to_one_swap_and_never_unlimited(amount):
    data = bytes.fromhex("095ea7b3") + encode(["address", "uint256"], [ROUTER, amount])
    call = Call(CHAIN, TUSD, 0, data)
    decision = evaluate(POLICY, decode(call), EvalContext(now=NOW, session_key_expires_at=NOW + 3600))
    per_tx = 50 * 10**18  # TUSD's per-transaction limit
    if amount >= 2**255:
        assert decision.outcome is D and "approval.unlimited" in fired(decision)
    elif amount > per_tx:
        assert decision.outcome is E and "approval.router_above_swap" in fired(decision)
    else:
        assert decision.outcome is A and not decision.spends  # the swap counts it, not the approval
