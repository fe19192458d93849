"""`Ledger.context`, which looks each asset's series up once for all its windows, gives the snapshot
the plain per-window calls gave.

The reference is the code it replaced, built from `Ledger.spent` and the USD series with its held
spends: on random ledgers (spends, releases, holds, settles) and random requests and windows.
"""

from __future__ import annotations

from hypothesis import example, given, settings, strategies as st

from policies.context import EvalContext
from policies.intent import NATIVE, Approval, Call, Decoded, Transfer
from signer.ledger import DAY, HOUR, Ledger, SignerState

ASSETS = [NATIVE, "0x" + "aa" * 20, "0x" + "bb" * 20]
PEOPLE = ["0x" + "01" * 20, "0x" + "02" * 20, "0x" + "03" * 20]
T0 = 1_700_000_000.0

# Whole hours: window starts often fall exactly on a spend or a hold, where `<=` and `<` differ.
_offset = st.sampled_from([0, HOUR, 2 * HOUR, DAY, DAY + HOUR, 2 * DAY, 7 * DAY, 8 * DAY, 14 * DAY])
_event = st.one_of(
    st.tuples(
        st.just("spend"),
        st.integers(0, 9),
        st.sampled_from([1, 2]),
        st.sampled_from(ASSETS),
        st.integers(0, 10**6),
        st.one_of(st.none(), st.integers(0, 10**6)),
        _offset,
    ),
    st.tuples(
        st.just("recipient"),
        st.integers(0, 9),
        st.sampled_from([1, 2]),
        st.sampled_from(PEOPLE),
        st.just(0),
        st.none(),
        _offset,
    ),
    st.tuples(
        st.just("release"), st.integers(0, 9), st.just(1), st.just(NATIVE), st.just(0), st.none(), st.just(0)
    ),
    st.tuples(
        st.just("hold"),
        st.integers(0, 9),
        st.sampled_from([1, 2]),
        st.sampled_from(ASSETS),
        st.integers(0, 10**6),
        st.one_of(st.none(), st.integers(0, 10**6)),
        _offset,
    ),
    st.tuples(
        st.just("settle"), st.integers(0, 9), st.just(1), st.just(NATIVE), st.just(0), st.none(), _offset
    ),
)
_action = st.one_of(
    st.builds(
        Transfer,
        st.sampled_from([1, 2]),
        st.sampled_from(ASSETS),
        st.sampled_from(PEOPLE),
        st.integers(0, 99),
    ),
    st.builds(
        Approval,
        st.sampled_from([1, 2]),
        st.sampled_from(ASSETS[1:]),
        st.sampled_from(PEOPLE),
        st.integers(0, 99),
        st.just("approve"),
    ),
)


def _reference(
    ledger: Ledger, decoded: Decoded, windows: set[int], now: float, state: SignerState
) -> EvalContext:
    assets = {(a.chain_id, a.asset) for a in decoded.transfers()} | {
        (a.chain_id, a.asset) for a in decoded.approvals()
    }
    spent: dict[tuple[int, str, int], int] = {}
    for chain_id, asset in assets:
        for period in windows:
            spent[(chain_id, asset, period)] = ledger.spent(chain_id, asset, now - period)
    seen = frozenset(
        t.recipient for t in decoded.transfers() if (t.chain_id, t.recipient) in ledger._recipients
    )
    return EvalContext(
        now=now,
        spent=spent,
        spent_usd={p: ledger._usd.sum_since(now - p) + ledger._aged(None, now - p) for p in windows},
        tx_count={HOUR: ledger._txs.sum_since(now - HOUR)},
        new_recipients={DAY: ledger._new_recipients.sum_since(now - DAY)},
        seen_recipients=seen,
        prices={},
        session_key_expires_at=state.session_key_expires_at,
        session_key_balance_cap=state.session_key_balance_cap,
        frozen=state.frozen,
    )


@settings(max_examples=400, deadline=None)
# A held spend exactly at the window's start still counts (held ts <= since).
@example([("hold", 0, 1, NATIVE, 5, 7, 0)], [Transfer(1, NATIVE, PEOPLE[1], 1)], {DAY}, DAY)
@given(
    st.lists(_event, max_size=40),
    st.lists(_action, max_size=4),
    st.sets(st.sampled_from([60, HOUR, DAY, 7 * DAY, 30 * DAY]), max_size=4),
    _offset,
)
def test_the_snapshot_equals_the_per_window_calls(events, actions, windows, at):
    ledger = Ledger()
    for kind, n, chain_id, what, amount, usd, offset in events:
        request_id, ts = f"req_{n}", T0 + offset
        if kind == "spend":
            ledger.add_spend(request_id, chain_id, what, amount, usd, ts)
            ledger.add_tx(request_id, ts)
        elif kind == "recipient":
            ledger.add_recipient(chain_id, what, ts, request_id)
        elif kind == "release":
            ledger.release(request_id)
        elif kind == "hold":
            ledger.hold(request_id, ts, [(chain_id, what, amount, usd)])
        else:
            ledger.settle(request_id, ts)
    decoded = Decoded(Call(1, PEOPLE[0], 0), tuple(actions))
    state = SignerState(T0 + DAY, 10**18, False)
    now = T0 + at
    got = ledger.context(decoded, windows, now, state)
    want = _reference(ledger, decoded, windows, now, state)
    assert got == want
    assert list(got.spent) == list(want.spent) and list(got.spent_usd) == list(want.spent_usd)


def test_a_held_spend_exactly_at_the_windows_start_counts():
    """Reservations are summed after `since`; a held one stamped at `since` itself must count too,
    or a spend on the boundary would fall between the two and free room under the limit."""
    ledger = Ledger()
    ledger.hold("req_0", T0, [(1, NATIVE, 5, 7)])
    assert ledger.spent(1, NATIVE, T0) == 5
    state = SignerState(T0 + DAY, 10**18, False)
    got = ledger.context(
        Decoded(Call(1, PEOPLE[0], 0), (Transfer(1, NATIVE, PEOPLE[1], 1),)), {DAY}, T0 + DAY, state
    )
    assert got.spent[(1, NATIVE, DAY)] == 5 and got.spent_usd[DAY] == 7
