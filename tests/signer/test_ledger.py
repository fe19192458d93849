"""The in-memory ledger: window sums, out-of-order inserts, releases."""

from hypothesis import given, settings, strategies as st

from signer.ledger import _Series


def brute(entries, since):
    return sum(a for t, a, _ in entries if t > since)


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.floats(0, 1000, allow_nan=False), st.integers(0, 10**20), st.sampled_from("abcde")),
        max_size=60,
    ),
    release=st.sets(st.sampled_from("abcde"), max_size=3),
    since=st.floats(-1, 1001, allow_nan=False),
)
def test_series_sum_equals_brute_force(ops, release, since):
    series = _Series()
    for ts, amount, owner in ops:
        series.add(ts, amount, owner)
    for owner in release:
        series.remove_owner(owner)
    kept = [(t, a, o) for t, a, o in ops if o not in release]
    assert series.sum_since(since) == brute(kept, since)


def test_window_boundary_is_exclusive():
    series = _Series()
    series.add(100.0, 5, "a")
    assert series.sum_since(99.999) == 5
    assert series.sum_since(100.0) == 0
