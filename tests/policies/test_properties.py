"""Properties the signer's safety rests on, checked over random request sequences."""

from hypothesis import example, given, settings, strategies as st

from policies.context import EvalContext
from policies.decision import Outcome
from policies.decode import decode
from policies.evaluate import evaluate
from policies.intent import NATIVE, Call
from policies.loader import parse_policy

CHAIN = 31337
FRIEND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
MILLI = 10**15  # 0.001 ETH
POLICY = parse_policy(f"""
version: 1
chains: [{{id: {CHAIN}, name: anvil}}]
assets:
  - {{chain: {CHAIN}, asset: native, symbol: ETH, decimals: 18, per_tx: "0.01", windows: {{1h: "0.025", 24h: "0.05"}},
     price_usd: "3000"}}
address_book: [{{chain: {CHAIN}, address: "{FRIEND}", name: friend}}]
usd: {{per_tx: "30", windows: {{2h: "90"}}}}
rate_limits: {{tx_per_hour: 100000, new_recipients_per_day: 5}}
""")
WINDOWS = [(3600, 25 * MILLI), (86400, 50 * MILLI)]
USD_WINDOW = (7200, 90 * 10**6)
PER_TX = 10 * MILLI


def context(now: float, committed: list[tuple[float, int, int]]) -> EvalContext:
    """What the ledger would report: sums of committed spends with ts in (now - period, now]."""
    spent = {
        (CHAIN, NATIVE, p): sum(a for ts, a, _ in committed if ts > now - p) for p in POLICY.window_seconds()
    }
    spent_usd = {p: sum(u for ts, _, u in committed if ts > now - p) for p in POLICY.window_seconds()}
    return EvalContext(now=now, spent=spent, spent_usd=spent_usd, session_key_expires_at=float("inf"))


def transfer(amount: int):
    return decode(Call(CHAIN, FRIEND, amount))


gaps = st.sampled_from([0, 1, 60, 1800, 3599, 3600, 3601, 7199, 7200, 86399, 86400]) | st.integers(0, 90000)
amounts = st.integers(1, 12).map(lambda n: n * MILLI) | st.integers(1, 12 * MILLI)
steps = st.lists(st.tuples(gaps, amounts), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(steps)
@example([(0, 8 * MILLI)] * 5)  # a burst: only the window limits stop it
@example([(3599, 10 * MILLI)] * 8)
def test_allowed_spends_never_exceed_any_window(requests):
    now, committed, times = 0.0, [], []
    for step, amount in requests:
        now += step
        times.append(now)
        decision = evaluate(POLICY, transfer(amount), context(now, committed))
        if decision.outcome is Outcome.ALLOW:
            (spend,) = decision.spends
            assert spend.amount == amount <= PER_TX
            assert spend.usd_micros is not None and spend.usd_micros <= 30 * 10**6
            committed.append((now, spend.amount, spend.usd_micros))
    for end in times:
        for period, limit in WINDOWS:
            assert sum(a for ts, a, _ in committed if end - period < ts <= end) <= limit
        period, limit = USD_WINDOW
        assert sum(u for ts, _, u in committed if end - period < ts <= end) <= limit


spent_maps = st.fixed_dictionaries(
    {
        3600: st.integers(0, 30 * MILLI),
        7200: st.integers(0, 100 * 10**6),
        86400: st.integers(0, 60 * MILLI),
    }
)


def ctx_from(spent: dict[int, int]) -> EvalContext:
    return EvalContext(
        now=1.0,
        spent={(CHAIN, NATIVE, 3600): spent[3600], (CHAIN, NATIVE, 86400): spent[86400]},
        spent_usd={7200: spent[7200]},
        session_key_expires_at=2.0,
    )


@settings(max_examples=300)
@given(st.integers(1, 20 * MILLI), st.data(), spent_maps)
def test_smaller_amounts_stay_allowed(amount, data, spent):
    if evaluate(POLICY, transfer(amount), ctx_from(spent)).outcome is not Outcome.ALLOW:
        return
    smaller = data.draw(st.integers(1, amount))
    assert evaluate(POLICY, transfer(smaller), ctx_from(spent)).outcome is Outcome.ALLOW


@given(st.integers(0, 2**256 - 1), st.binary(max_size=200), spent_maps)
def test_evaluate_is_deterministic(value, data, spent):
    first = evaluate(POLICY, decode(Call(CHAIN, FRIEND, value, data)), ctx_from(spent))
    second = evaluate(POLICY, decode(Call(CHAIN, FRIEND, value, bytes(data))), ctx_from(dict(spent)))
    assert first == second


def test_allowed_is_reachable_in_the_simulation():
    """Guards the properties above against passing only because nothing is ever allowed."""
    assert evaluate(POLICY, transfer(MILLI), context(0.0, [])).outcome is Outcome.ALLOW
    assert evaluate(POLICY, transfer(PER_TX + 1), context(0.0, [])).outcome is Outcome.ESCALATE
