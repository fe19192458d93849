"""Hypothesis on the ledger's rule for transactions in flight: a held spend counts in every window
however old it is, a settled one counts from the moment its receipt was seen, a released one not
at all; checked against a plain model after every step of random histories."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings, strategies as st

from policies.intent import NATIVE, Call, Decoded, Transfer
from signer.ledger import Ledger, SignerState

CHAIN = 1
WINDOWS = (3600, 86400, 7 * 86400)
FRIEND = "0x" + "11" * 20
TRANSFER = Decoded(Call(CHAIN, FRIEND, 1), (Transfer(CHAIN, NATIVE, FRIEND, 1),))
STATE = SignerState(None, None, False)

steps = st.lists(
    st.one_of(
        st.tuples(st.just("sign"), st.integers(min_value=1, max_value=10**18)),
        st.tuples(st.just("advance"), st.integers(min_value=1, max_value=3 * 86400)),
        st.tuples(st.just("settle"), st.integers(min_value=0, max_value=30)),
        st.tuples(st.just("release"), st.integers(min_value=0, max_value=30)),
    ),
    max_size=40,
)


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
            counted = [
                t for t in model if t.state == "held" or (t.state == "settled" and t.ts > now - window)
            ]
            assert ctx.spent[(CHAIN, NATIVE, window)] == sum(t.amount for t in counted)
            assert ctx.spent_usd[window] == sum(t.amount // 10 for t in counted)


def test_a_restart_holds_old_transactions_in_flight_once_even_when_a_longer_window_is_loaded(tmp_path):
    """From the records: a sent transaction older than every window still counts, and extending the
    ledger backwards for a longer window does not count it a second time."""
    import json

    from signer.store.db import connect, ensure_schema
    from signer.tier1.policy_live import load_ledger

    conn = connect(tmp_path / "signer.db")
    ensure_schema(conn)
    now, day = 10_000_000.0, 86400.0
    rows = [
        ("req_old", now - 10 * day, "unconfirmed", 7),
        ("req_mined", now - 10 * day, "confirmed", 5),
        ("req_recent", now - 3600, "signed", 3),
    ]
    for request_id, ts, status, amount in rows:
        conn.execute(
            "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at,"
            " status, outcome, chain_id, tx_hash) VALUES(?,?,?,?,?,?,?,?,?,?)",
            (
                request_id,
                "c",
                request_id,
                "sign",
                "h",
                ts,
                status,
                json.dumps({"broadcast": True, "sender": "0x" + "11" * 20, "nonce": amount}),
                CHAIN,
                "0x%064x" % amount,
            ),
        )
        conn.execute(
            "INSERT INTO spends(request_id, chain_id, asset, amount, ts, state) VALUES(?,?,?,?,?,?)",
            (request_id, CHAIN, NATIVE, str(amount), ts, "committed"),
        )
    ledger = load_ledger(conn, now - day)
    assert (
        ledger.spent(CHAIN, NATIVE, now - day) == 7 + 3
    )  # the old one in flight counts; the mined one aged out
    load_ledger(conn, now - 30 * day, ledger, until=now - day)  # a 30-day window was installed
    assert ledger.spent(CHAIN, NATIVE, now - 30 * day) == 7 + 5 + 3
    assert ledger.spent(CHAIN, NATIVE, now - day) == 7 + 3
    assert ledger.settle("req_old", now) and ledger.spent(CHAIN, NATIVE, now - day) == 7 + 3
    conn.close()
