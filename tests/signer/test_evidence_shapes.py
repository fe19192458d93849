"""The audit evidence the engine records, built faster, must stay the evidence it always was.

`signer.replay` re-runs every decision from these records, and an old log must keep verifying and
replaying: the JSON of a context is compared here, value for value and as canonical text, with the
formulation it replaced, for any context the types allow.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from policies.context import EvalContext, PriceQuote
from signer import records
from signer.store.audit import canonical

chains = st.integers(min_value=0, max_value=2**63)
assets = st.one_of(st.just("native"), st.text(min_size=1, max_size=42).filter(lambda a: ":" not in a))
amounts = st.integers(min_value=0, max_value=2**256 - 1)
windows = st.sampled_from([3600, 86400, 604800]) | st.integers(min_value=1, max_value=10**7)
stamps = st.floats(min_value=0, max_value=2**40, allow_nan=False)

contexts = st.builds(
    EvalContext,
    now=stamps,
    spent=st.dictionaries(st.tuples(chains, assets, windows), amounts, max_size=6),
    spent_usd=st.dictionaries(windows, amounts, max_size=3),
    tx_count=st.dictionaries(windows, st.integers(min_value=0, max_value=10**9), max_size=3),
    new_recipients=st.dictionaries(windows, st.integers(min_value=0, max_value=10**6), max_size=3),
    seen_recipients=st.frozensets(st.text(max_size=42), max_size=4),
    prices=st.dictionaries(
        st.tuples(chains, assets),
        st.none() | st.builds(PriceQuote, amounts, st.integers(min_value=0, max_value=36)),
        max_size=4,
    ),
    session_key_expires_at=st.none() | stamps,
    session_key_balance_cap=st.none() | amounts,
    frozen=st.booleans(),
)


def _context_as_before(ctx: EvalContext) -> dict:
    """`records.context_to_json` as it was written before its keys were formatted with f-strings."""

    def key(parts: tuple) -> str:
        return ":".join(str(p) for p in parts)

    return {
        "now": ctx.now,
        "spent": {key(k): str(v) for k, v in ctx.spent.items()},
        "spent_usd": {str(k): str(v) for k, v in ctx.spent_usd.items()},
        "tx_count": {str(k): v for k, v in ctx.tx_count.items()},
        "new_recipients": {str(k): v for k, v in ctx.new_recipients.items()},
        "seen_recipients": sorted(ctx.seen_recipients),
        "prices": {
            key(k): None if q is None else [str(q.usd_micros_per_unit), q.decimals]
            for k, q in ctx.prices.items()
        },
        "session_key_expires_at": ctx.session_key_expires_at,
        "session_key_balance_cap": None
        if ctx.session_key_balance_cap is None
        else str(ctx.session_key_balance_cap),
        "frozen": ctx.frozen,
    }


@given(contexts)
def test_a_context_is_recorded_as_it_always_was_and_reads_back(ctx):
    got = records.context_to_json(ctx)
    before = _context_as_before(ctx)
    assert got == before
    assert list(got) == list(before) and list(got["spent"]) == list(before["spent"])  # same order, same text
    assert canonical(got) == canonical(before)
    assert records.context_from_json(got) == ctx  # what replay reads back
