"""A flood of forged companion messages is refused in full but recorded within a budget."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest
from hypothesis import given, strategies as st

from signer.tier1.refusals import RECORDED_PER_WINDOW, RefusalBudget
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError
from signer.wire.protocol import Scope


@given(
    st.lists(
        st.tuples(st.sampled_from(["approval.refused", "freeze.refused"]), st.floats(0, 5.0)), max_size=300
    )
)
def test_every_refusal_is_recorded_or_counted_and_no_window_records_more_than_its_budget(events):
    budget, now = RefusalBudget(per_window=5, window=10.0), 0.0
    recorded: dict[str, list[float]] = {}
    counted = {}
    for kind, step in events:
        now += step
        unrecorded = budget.admit(kind, now)
        if unrecorded is not None:
            recorded.setdefault(kind, []).append(now)
            counted[kind] = counted.get(kind, 0) + 1 + unrecorded
    for kind in recorded:
        total = sum(1 for k, _ in events if k == kind)
        assert counted[kind] + budget._unrecorded.get(kind, 0) == total  # nothing lost, only not written
        times = recorded[kind]
        # fixed windows: any 10 s span overlaps at most two of them
        assert all(sum(1 for t in times if start <= t < start + 10.0) <= 2 * 5 for start in times)


def test_the_count_of_unrecorded_refusals_reaches_the_next_record():
    budget = RefusalBudget(per_window=2, window=60.0)
    assert [budget.admit("k", t) for t in (0, 1, 2, 3, 4)] == [0, 0, None, None, None]
    assert budget.admit("k", 60.0) == 3
    assert budget.admit("other", 60.0) == 0  # each kind has its own budget


@pytest.mark.chain
def test_a_bridge_flooding_forged_pairings_cannot_flood_the_audit_log(stack):
    bridge = stack.client_token("rogue-bridge", Scope.BRIDGE)
    forged = 3 * RECORDED_PER_WINDOW

    async def flood() -> int:
        refused = 0
        async with SignerClient(stack.socket, bridge) as client:
            for _ in range(forged):
                with pytest.raises(SignerError):
                    await client.call(
                        "companion.pair_complete",
                        {
                            "pairing_id": "pair_" + secrets.token_hex(8),
                            "device_pub": "00" * 32,
                            "name": "x",
                            "main_address": "0x" + "11" * 20,
                            "ts": time.time(),
                            "nonce": "00" * 32,
                            "signature": "00" * 64,
                            "mac": "00" * 32,
                        },
                    )
                refused += 1
        return refused

    assert asyncio.run(flood()) == forged
    entries = stack.call_sync(stack.admin_token, "audit.tail", {"n": 1000, "kind": "companion.pair_refused"})
    assert len(entries["entries"]) == RECORDED_PER_WINDOW
    assert stack.owlia("audit", "verify").returncode == 0
