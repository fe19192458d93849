"""SeenUpdates: a redelivered update is dropped, a new one never is, and memory stays bounded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from bot.channels.telegram.dedupe import SeenUpdates

calls = st.lists(
    st.one_of(
        st.tuples(st.just("update"), st.integers(0, 60)), st.tuples(st.just("confirm"), st.integers(0, 60))
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(window=st.integers(1, 20), steps=calls)
def test_it_agrees_with_the_plain_model_and_never_holds_more_than_its_window(window, steps):
    seen = SeenUpdates(window)
    model: list[int] = []  # ids remembered, oldest first: what the channel kept before, pruned on confirm
    for op, value in steps:
        if op == "update":
            fresh = value not in model
            assert seen.first_time(value) is fresh
            if fresh:
                model = (model + [value])[-window:]
        else:
            seen.confirmed_below(value)
            model = [i for i in model if i >= value]
        assert len(seen) == len(model) <= window


@settings(max_examples=100, deadline=None)
@given(batches=st.lists(st.integers(1, 100), max_size=60), lost=st.lists(st.booleans(), max_size=60))
def test_polling_dispatches_every_update_once_and_keeps_at_most_one_batch(batches, lost):
    """Telegram's side of long polling: each answer holds the unconfirmed updates from the offset on
    (at most 100); an answer the bot never read comes again."""
    seen = SeenUpdates(10_000)
    next_id, pending, offset, dispatched = 1, [], 0, []
    for size, answer_lost in zip(batches, lost + [False] * len(batches)):
        pending.extend(range(next_id, next_id + size))
        next_id += size
        pending = [i for i in pending if i >= offset]  # asking for `offset` confirms the ones below
        batch = pending[:100]
        if answer_lost or not batch:
            continue
        dispatched.extend(i for i in batch if seen.first_time(i))
        offset = batch[-1] + 1
        seen.confirmed_below(offset)
        assert len(seen) == 0
    assert dispatched == sorted(set(dispatched))
    assert dispatched == list(range(1, len(dispatched) + 1))


def test_a_webhook_window_forgets_the_oldest_first():
    seen = SeenUpdates(3)
    assert [seen.first_time(i) for i in (1, 2, 3, 2, 4)] == [True, True, True, False, True]
    assert len(seen) == 3 and seen.first_time(1) and not seen.first_time(4)


def test_an_empty_window_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        SeenUpdates(0)
