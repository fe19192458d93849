"""Hypothesis on the ledger's rule for transactions in flight: a held spend counts in every window
however old it is, a settled one counts from the moment its receipt was seen, a released one not
at all; checked against a plain model after every step of random histories."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.intent import NATIVE, Call, Decoded, Transfer
from signer.ledger import Ledger, SignerState

CHAIN = 1
WINDOWS = (3600, 86400, 7 * 86400)
FRIEND = "0x" + "11" * 20
TRANSFER = Decoded(Call(CHAIN, FRIEND, 1), (Transfer(CHAIN, NATIVE, FRIEND, 1),))
STATE = SignerState(None, None, False)

steps = st.lists(st.one_of(
    st.tuples(st.just("sign"), st.integers(min_value=1, max_value=10**18)),
    st.tuples(st.just("advance"), st.integers(min_value=1, max_value=3 * 86400)),
    st.tuples(st.just("settle"), st.integers(min_value=0, max_value=30)),
    st.tuples(st.just("release"), st.integers(min_value=0, max_value=30)),
), max_size=40)


@dataclass
class _Tx:
    amount: int
    ts: float
    state: str = "held"


@settings(max_examples=300, deadline=None)
@given(steps=steps)
def test_held_spends_count_until_settled_or_released(steps):
    ledger, model, now = Ledger(), [], 1_000_000.0
    for op, arg in steps:
        if op == "sign":
            request_id = f"req_{len(model)}"
            ledger.add_spend(request_id, CHAIN, NATIVE, arg, arg // 10, now)
            ledger.hold(request_id, now, [(CHAIN, NATIVE, arg, arg // 10)])
            model.append(_Tx(arg, now))
        elif op == "advance":
            now += arg
        elif model:
            index = arg % len(model)
            tx = model[index]
            if op == "settle":
                assert ledger.settle(f"req_{index}", now) == (tx.state == "held")
                if tx.state == "held":
                    tx.state, tx.ts = "settled", max(tx.ts, now)
            elif tx.state == "held":  # only a transaction still in flight is ever proven dead
                ledger.release(f"req_{index}")
                tx.state = "released"
        ctx = ledger.context(TRANSFER, set(WINDOWS), now, STATE)  # what the policy is shown
        for window in WINDOWS:
            counted = [t for t in model if t.state == "held" or (t.state == "settled" and t.ts > now - window)]
            assert ctx.spent[(CHAIN, NATIVE, window)] == sum(t.amount for t in counted)
            assert ctx.spent_usd[window] == sum(t.amount // 10 for t in counted)
