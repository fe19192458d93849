"""The bridge's memory of refused pairing ids: a flood of junk ids cannot lock pairing out."""

from __future__ import annotations

from companion_bridge.limits import MAX_PAIRINGS_TRACKED, BridgeLimits, Guard

REAL = "pair_" + "a" * 16


def test_a_flood_of_junk_pairing_ids_neither_locks_pairing_out_nor_unburns_a_real_code():
    now = [0]
    guard = Guard(BridgeLimits(pair_failures_to_burn=5), clock=lambda: now[0])
    for _ in range(5):
        guard.pairing_failed(REAL, "10.0.0.1")
    assert guard.pairing_burnt(REAL)
    for i in range(3 * MAX_PAIRINGS_TRACKED):  # one refusal each, from anywhere
        guard.pairing_failed(f"pair_{i:016x}", f"2001:db8::{i:x}")
        now[0] += 1000
    assert len(guard._pair_failures) <= MAX_PAIRINGS_TRACKED
    assert guard.pairing_burnt(REAL)  # the most refused id is the last one forgotten
    assert not guard.pairing_burnt("pair_" + "b" * 16)  # the user's fresh code still gets through
