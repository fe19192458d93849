"""/events/poll's parameters are checked by hand (no web framework): every value in
range is taken as given, every other one is 422, whatever the text."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from bot.gateway.app import MAX_LIMIT, MAX_WAIT, GatewayError, PollQuery


@given(st.integers(-(10**6), 10**6), st.integers(-(10**4), 10**4))
def test_integers_are_taken_only_within_bounds(since: int, limit: int) -> None:
    query = {"since": str(since), "limit": str(limit)}
    if since >= 0 and 1 <= limit <= MAX_LIMIT:
        assert PollQuery.parse(query) == PollQuery(since=since, limit=limit)
    else:
        with pytest.raises(GatewayError) as info:
            PollQuery.parse(query)
        assert info.value.status == 422


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_wait_is_finite_seconds_up_to_the_cap(wait: float) -> None:
    if math.isfinite(wait) and 0.0 <= wait <= MAX_WAIT:
        assert PollQuery.parse({"wait": repr(wait)}).wait == wait
    else:
        with pytest.raises(GatewayError):
            PollQuery.parse({"wait": repr(wait)})


@given(st.text(max_size=30))
def test_any_text_is_a_valid_value_or_a_422(text: str) -> None:
    for name in ("since", "limit", "wait", "type"):
        try:
            parsed = PollQuery.parse({name: text})
        except GatewayError as exc:
            assert exc.status == 422
        else:
            assert 0 <= parsed.since and 1 <= parsed.limit <= MAX_LIMIT and 0 <= parsed.wait <= MAX_WAIT
