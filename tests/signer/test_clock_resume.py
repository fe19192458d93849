"""A restart or a reboot resumes the signer's clock where it was, and the admin CLI cannot move it.

The daemon saves its clock (signer time, wall and steady clock, boot id) in `meta` every
SAVE_INTERVAL_SECONDS and at a clean shutdown; `SignerClock.resume` starts from that and from the
latest spend and request, never from what the admin CLI writes. End to end (a signer process whose
system clock and boot id the test controls, tests.signer.skewed_clock), the review's attacks:
R1 a forward step the running signer was absorbing, then a restart; R2 `owlia signer client add`
run with the clock ten years ahead; R3 an expired session key, kill -9 and the clock set back.
Then `resume` and `start_time` on made-up sources, by hand and with hypothesis.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from hypothesis import given, settings, strategies as st

from signer import clock as clock_module, daemon as daemon_module
from signer.auth import add_client
from signer.clock import (
    CATCH_UP,
    SAVE_INTERVAL_SECONDS,
    STATE_KEY,
    ClockState,
    SignerClock,
    estimate,
    latest_recorded,
    load_state,
    save_state,
    start_time,
)
from signer.store.audit import AuditLog
from signer.store.db import connect, ensure_schema, get_meta, set_meta
from signer.wire.exchange import new_idempotency_key
from signer.wire.protocol import Scope
from tests.conftest import FRIEND, InProcessSigner, throwaway_audit_keys
from tests.signer.skewed_clock import set_offset
from tests.signer.test_clock_skew import (
    CENT,
    DAY_LIMIT,
    EPS,
    HOUR,
    SkewedStack,
    Source,
    committed,
    new_key,
    sign_cents,
    sign_one,
)

TEN_YEARS = 10 * 365 * 86400.0
FASTEST = 1 + CATCH_UP

T = TypeVar("T")


@pytest.fixture()
def skewed(tmp_path, anvil):
    stack = SkewedStack(tmp_path, anvil.url)
    yield stack
    stack.close()


def _read_db(stack: SkewedStack, read: Callable[[sqlite3.Connection], T]) -> T:
    conn = connect(stack.paths.db, readonly=True)
    try:
        return read(conn)
    finally:
        conn.close()


def saved_state(stack: SkewedStack) -> ClockState | None:
    return _read_db(stack, load_state)


def floor_on_record(stack: SkewedStack) -> float:
    return _read_db(stack, latest_recorded)


def lag(stack: SkewedStack) -> float:
    return stack.call_sync(stack.admin_token, "status")["clock_lag_seconds"]


# ---- the review's reproductions, which must now fail the attack (end to end) --------------------


def wait_saved(stack: SkewedStack, done, timeout: float) -> ClockState:
    """Until the daemon's saved clock satisfies `done` (it saves every SAVE_INTERVAL_SECONDS)."""
    deadline = time.monotonic() + timeout
    while True:
        state = saved_state(stack)
        if state is not None and done(state):
            return state
        assert time.monotonic() < deadline, f"the daemon did not save its clock as expected: {state}"
        time.sleep(0.25)


@pytest.mark.chain
@pytest.mark.parametrize("restart", ["stop", "kill9", "stop-reboot", "kill9-reboot"])
def test_r1_a_step_being_absorbed_is_not_adopted_by_a_restart(skewed, restart):
    stack = skewed.start()
    new_key(stack)
    bot = stack.client_token("bot")
    assert sign_cents(stack, bot, 5) == ["signed"] * 5
    stack.skew(25 * HOUR)
    assert sign_one(stack, bot)["status"] != "signed"  # absorbed while running
    if restart.startswith("stop"):
        stack.stop()  # the shutdown saves the clock, lag included
    else:
        if restart.endswith(
            "reboot"
        ):  # across a reboot only the saved lag tells: wait for a round that saw it
            wait_saved(stack, lambda s: s.wall - s.signer > 24 * HOUR, 3 * SAVE_INTERVAL_SECONDS)
        stack.kill9()  # no shutdown save; within one boot the steady clock measures the downtime anyway
    if restart.endswith("reboot"):
        stack.reboot()
    stack.start()
    assert 24 * HOUR < lag(stack) <= 25 * HOUR  # still being absorbed
    reply = sign_one(stack, bot)
    assert reply["status"] != "signed" and reply["rule_id"] == "limit.window.24h", reply
    assert committed(stack) == DAY_LIMIT  # before the fix: the whole day's limit again, seconds later


@pytest.mark.chain
@pytest.mark.parametrize("ended", ["stop", "kill9"])
def test_r2_the_admin_cli_with_its_clock_ten_years_ahead_does_not_move_the_signers_time(skewed, ended):
    stack = skewed.start()
    new_key(stack)
    bot = stack.client_token("bot")
    assert sign_cents(stack, bot, 5) == ["signed"] * 5
    floor = floor_on_record(stack)
    stack.stop() if ended == "stop" else stack.kill9()
    stack.skew(TEN_YEARS)  # a glitch while the operator adds a client: its record is the last one written
    out = stack.skewed_cli(
        "signer",
        "client",
        "add",
        "other",
        "--scope",
        "read",
        "--ttl-days",
        "1",
        "--passphrase-file",
        str(stack.passfile),
    )
    assert out.returncode == 0, out.stderr
    assert floor_on_record(stack) == floor  # nothing the CLI wrote counts
    conn = connect(stack.paths.db, readonly=True)
    try:
        created, expires = conn.execute(
            "SELECT created_at, expires_at FROM clients WHERE name='other'"
        ).fetchone()
        (audit_ts,) = conn.execute("SELECT ts FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    real = time.time()
    assert abs(created - real) < 60 and abs(audit_ts - real) < 60  # stamped with the signer's time
    assert abs(expires - (real + 86400)) < 60  # the token lives a day, not ten years and a day
    stack.skew(0)  # the clock is right again
    stack.start()
    assert abs(lag(stack)) < 60  # before the fix: ten years ahead for good
    reply = sign_one(stack, bot)  # the old key is not ten years expired and the window was not emptied
    assert reply["status"] != "signed" and reply["rule_id"] == "limit.window.24h", reply
    assert committed(stack) == DAY_LIMIT


@pytest.mark.chain
def test_r2_a_token_issued_while_the_signer_runs_is_dated_by_the_signers_clock(skewed, tmp_path):
    stack = skewed.start()
    wait_saved(stack, lambda state: True, 10)  # the running signer's clock is on record
    cli_clock = tmp_path / "cli_offset"  # only the CLI's clock is off; the signer's stays right
    set_offset(cli_clock, TEN_YEARS)
    out = stack.skewed_cli(
        "signer",
        "client",
        "add",
        "brief",
        "--scope",
        "read",
        "--ttl-days",
        "1",
        "--passphrase-file",
        str(stack.passfile),
        offset=cli_clock,
    )
    assert out.returncode == 0, out.stderr
    token = out.stdout.strip().splitlines()[-1]
    assert stack.call_sync(token, "status")["client"]["name"] == "brief"
    conn = connect(stack.paths.db, readonly=True)
    try:
        (expires,) = conn.execute("SELECT expires_at FROM clients WHERE name='brief'").fetchone()
    finally:
        conn.close()
    assert abs(expires - (time.time() + 86400)) < 60  # a day on the signer's clock
    listed = json.loads(stack.skewed_cli("signer", "client", "list", offset=cli_clock).stdout)
    assert [c["active"] for c in listed if c["name"] == "brief"] == [
        True
    ]  # by the signer's clock, not the CLI's
    assert abs(lag(stack)) < 60


@pytest.mark.chain
@pytest.mark.slow
def test_r3_an_expired_session_key_stays_expired_after_kill9_and_the_clock_set_back(skewed):
    stack = skewed.start()
    created = stack.call_sync(
        stack.admin_token,
        "session_key.create",
        {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337, "ttl_seconds": 60},
    )
    expires_at = created["session_key"]["expires_at"]
    bot = stack.client_token("bot")
    assert sign_cents(stack, bot, 1) == ["signed"]
    # The key expires; the crash comes once a save after the expiry is on disk (at most
    # SAVE_INTERVAL_SECONDS later): a crash loses at most that much of the signer's time.
    wait_saved(stack, lambda s: s.signer > expires_at + 1, 60 + 3 * SAVE_INTERVAL_SECONDS)
    check = {"intent": {"chain_id": 31337, "to": FRIEND, "value": str(CENT)}}
    assert stack.call_sync(bot, "policy.check", check)["decision"]["rule_id"] == "session_key.expired"
    stack.kill9()  # no clean shutdown, no last save
    stack.skew(-HOUR)  # e.g. a reboot before NTP sync
    stack.start()
    reply = sign_one(stack, bot)
    assert reply["status"] != "signed" and reply["rule_id"] == "session_key.expired", reply  # not revived
    stack.kill9()
    stack.reboot()  # and across a reboot, where the steady clock cannot help: the saved time still holds
    stack.start()
    assert stack.call_sync(bot, "policy.check", check)["decision"]["rule_id"] == "session_key.expired"


# ---- the daemon saves its clock -----------------------------------------------------------------


@pytest.mark.chain
def test_the_daemon_saves_its_clock_in_the_background_and_at_shutdown(tmp_path, anvil, monkeypatch):
    monkeypatch.setattr(daemon_module, "SAVE_INTERVAL_SECONDS", 0.05)
    home = InProcessSigner(tmp_path, anvil.url)

    async def run() -> tuple[ClockState, ClockState, int, float]:
        daemon = home.daemon()
        await daemon.start()
        try:
            first = load_state(daemon.reader)
            commits = daemon.writer.commits
            deadline = time.monotonic() + 20
            while daemon.writer.commits - commits < 3:  # three background saves, however slow the machine
                assert time.monotonic() < deadline, "the daemon did not save its clock in the background"
                await asyncio.sleep(0.02)
            later = load_state(daemon.reader)
            rounds = daemon.writer.commits - commits
        finally:
            await daemon.stop()
            last = daemon.clock()
        return first, later, rounds, last

    first, later, rounds, last = asyncio.run(run())
    assert first is not None and later is not None
    assert later.signer > first.signer and rounds >= 3  # one small commit per round
    assert later.boot_id == clock_module.read_boot_id()
    conn = connect(home.paths.db, readonly=True)
    try:
        final = load_state(conn)
        kinds = [k for (k,) in conn.execute("SELECT kind FROM audit ORDER BY seq DESC LIMIT 1")]
    finally:
        conn.close()
    assert final is not None and later.signer < final.signer <= last  # the shutdown's save
    assert kinds == ["signer.stopped"]  # in the same transaction as the last record


# ---- resume on made-up sources ------------------------------------------------------------------


@pytest.fixture()
def db(tmp_path):
    conn = connect(tmp_path / "signer.db")
    ensure_schema(conn)
    yield conn
    conn.close()


def record_spend(conn, ts: float) -> None:
    conn.execute(
        "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at,"
        " status) VALUES(?, 'c', ?, 'sign', 'h', ?, 'signed')",
        (f"r{ts}", f"k{ts}", ts - 1),
    )
    conn.execute(
        "INSERT INTO spends(request_id, chain_id, asset, amount, ts, state)"
        " VALUES(?, 1, 'native', '1', ?, 'committed')",
        (f"r{ts}", ts),
    )


def resume(conn, wall: float, steady: float, boot: str | None) -> SignerClock:
    return SignerClock.resume(conn, wall=Source(wall), steady=Source(steady), boot_id=lambda: boot)


T0 = 1.7e9


def test_same_boot_a_step_being_absorbed_stays_absorbed(db):
    save_state(db, ClockState(T0, T0 + 25 * HOUR, 500.0, "boot-a"))  # running 25 h behind the wall clock
    clock = resume(db, T0 + 25 * HOUR + 20, 520.0, "boot-a")  # restarted 20 s later, same boot
    assert clock() == pytest.approx(T0 + 20 * FASTEST)
    assert clock.lag() == pytest.approx(25 * HOUR - 2)


def test_same_boot_a_step_made_while_stopped_is_absorbed_like_one_made_while_running(db):
    save_state(db, ClockState(T0, T0, 500.0, "boot-a"))
    assert resume(db, T0 + 100 + 86400, 600.0, "boot-a")() == pytest.approx(T0 + 100 * FASTEST)


def test_same_boot_a_clock_set_back_rewinds_nothing_and_real_time_keeps_counting(db):
    save_state(db, ClockState(T0, T0, 500.0, "boot-a"))
    assert resume(db, T0 - 86400, 530.0, "boot-a")() == T0 + 30


def test_same_boot_an_ordinary_restart_follows_the_wall_clock(db):
    save_state(db, ClockState(T0, T0 + 0.5, 500.0, "boot-a"))
    assert resume(db, T0 + 60.5, 560.0, "boot-a")() == T0 + 60.5
    assert resume(db, T0 + 60.0001, 560.0, "boot-a")() == T0 + 60.0001  # NTP drift: followed


def test_another_boot_keeps_the_lag_that_was_being_absorbed(db):
    save_state(db, ClockState(T0, T0 + 25 * HOUR, 500.0, "boot-a"))
    clock = resume(db, T0 + 25 * HOUR + 300, 12.0, "boot-b")  # rebooted; the steady clock restarted
    assert clock() == T0 + 300
    assert clock.lag() == pytest.approx(25 * HOUR)


def test_another_boot_with_the_clock_behind_starts_from_the_saved_time_or_the_latest_spend(db):
    save_state(db, ClockState(T0, T0, 500.0, "boot-a"))
    assert resume(db, T0 - 3600, 5.0, "boot-b")() == T0
    record_spend(db, T0 + 7)  # a spend after the last save (a crash within the save interval)
    assert resume(db, T0 - 3600, 5.0, "boot-b")() == T0 + 7


def test_unknown_boot_ids_are_never_the_same_boot(db):
    save_state(db, ClockState(T0, T0, 500.0, None))
    assert resume(db, T0 + 86400, 600.0, None)() == T0 + 86400  # cannot tell downtime from a step
    save_state(db, ClockState(T0, T0, 500.0, "boot-a"))
    assert resume(db, T0 + 86400, 600.0, None)() == T0 + 86400


def test_nothing_saved_starts_from_the_wall_clock_or_the_latest_spend(db):
    assert load_state(db) is None
    assert resume(db, T0, 1.0, "boot-a")() == T0
    record_spend(db, T0 + 500)
    assert resume(db, T0, 1.0, "boot-a")() == T0 + 500


def test_a_malformed_saved_clock_counts_as_none(db, caplog):
    for text in (
        "not json",
        "[1, 2]",
        '{"signer": 1}',
        '{"signer": "nan", "wall": 1, "steady": 1, "boot_id": null}',
        '{"signer": 1, "wall": 1, "steady": 1, "boot_id": 7}',
        '{"signer": 1' + "0" * 400 + ', "wall": 1, "steady": 1, "boot_id": null}',  # OverflowError
        '{"signer": ' + "[" * 100_000 + "]" * 100_000 + "}",  # RecursionError, or too long
        '{"signer": 1, "wall": 1, "steady": 1, "boot_id": "' + "x" * 2000 + '"}',
    ):
        set_meta(db, STATE_KEY, text)
        with caplog.at_level(logging.WARNING, logger="owlia.signer"):
            assert load_state(db) is None
    assert "malformed" in caplog.text
    assert resume(db, T0, 1.0, "boot-a")() == T0


def test_the_saved_state_round_trips_and_is_a_reading_the_clock_reached(db):
    wall, steady = Source(T0), Source(10.0)
    clock = SignerClock(wall=wall, steady=steady, boot_id="boot-a")
    wall.now += 3600  # a step: the signer trails the wall clock from here
    steady.now += 10
    state = clock.state()
    assert state == ClockState(T0 + 11, T0 + 3600, 20.0, "boot-a")
    save_state(db, state)
    assert load_state(db) == state
    assert get_meta(db, STATE_KEY) == state.to_json()


def test_the_floor_ignores_what_the_admin_cli_writes(db, tmp_path):
    record_spend(db, T0)
    future = T0 + TEN_YEARS
    AuditLog(db, tmp_path / "anchor", clock=lambda: future, keys=throwaway_audit_keys()).append(
        "client.added", {"name": "x"}
    )
    add_client(db, "glitch", Scope.READ, ttl_seconds=60, now=future)
    assert latest_recorded(db) == T0
    assert resume(db, T0 + 5, 1.0, "boot-a")() == T0 + 5


def test_a_resumed_clock_catches_up_no_faster_than_ten_percent(db):
    save_state(db, ClockState(T0, T0 + HOUR, 500.0, "boot-a"))
    wall, steady = Source(T0 + HOUR + 10), Source(510.0)
    clock = SignerClock.resume(db, wall=wall, steady=steady, boot_id=lambda: "boot-b")
    assert clock() == T0 + 10
    steady.now += 100
    wall.now += 100
    assert clock() == pytest.approx(T0 + 10 + 100 * FASTEST)
    steady.now += HOUR / CATCH_UP
    wall.now += HOUR / CATCH_UP
    assert clock() == wall.now  # caught up


def test_starting_far_behind_the_wall_clock_is_warned_about(db, caplog):
    save_state(db, ClockState(T0, T0 + 25 * HOUR, 500.0, "boot-a"))
    with caplog.at_level(logging.WARNING, logger="owlia.signer"):
        resume(db, T0 + 25 * HOUR + 10, 510.0, "boot-a")
    assert "resumes" in caplog.text and "behind the system clock" in caplog.text
    caplog.clear()
    save_state(db, ClockState(T0, T0, 500.0, "boot-a"))
    with caplog.at_level(logging.WARNING, logger="owlia.signer"):
        resume(db, T0 + 30, 530.0, "boot-a")
    assert not caplog.records


def test_the_cli_estimates_the_signers_time_from_the_saved_clock(db):
    assert estimate(db, wall=Source(T0), steady=Source(1.0), boot_id=lambda: "boot-a") == T0  # nothing saved
    save_state(db, ClockState(T0, T0, 500.0, "boot-a"))
    ahead = estimate(db, wall=Source(T0 + TEN_YEARS), steady=Source(510.0), boot_id=lambda: "boot-a")
    assert ahead == pytest.approx(T0 + 10 * FASTEST)  # the CLI's clock ten years ahead: bounded
    assert estimate(db, wall=Source(T0 + 10), steady=Source(510.0), boot_id=lambda: "boot-a") == T0 + 10


def test_the_cli_never_estimates_before_a_spend_on_record(db):
    """Nothing saved yet (or the state lost), the CLI's clock set back: the records still hold it."""
    record_spend(db, T0 + 500)
    assert estimate(db, wall=Source(T0), steady=Source(1.0), boot_id=lambda: "boot-a") == T0 + 500


# ---- start_time's bounds, for any saved state and sources (hypothesis) --------------------------

TIME = st.floats(min_value=0.0, max_value=4e9, allow_nan=False)
STEADY = st.floats(min_value=0.0, max_value=1e8, allow_nan=False)
BOOT = st.sampled_from(["boot-a", "boot-b", None])
STATE = st.builds(ClockState, TIME, TIME, STEADY, BOOT)


@given(st.one_of(st.none(), STATE), TIME, TIME, STEADY, BOOT)
@settings(max_examples=1000, deadline=None)
def test_the_start_is_never_below_the_floor_and_same_boot_within_real_time_bounds(
    saved, floor, wall, steady_now, boot
):
    start = start_time(saved, floor, wall, steady_now, boot)
    assert start >= floor
    if saved is None:
        assert start == max(floor, wall)
        return
    assert start >= saved.signer  # never rewound
    lowest = max(floor, saved.signer)
    if saved.boot_id is not None and saved.boot_id == boot:
        elapsed = max(0.0, steady_now - saved.steady)
        low, high = saved.signer + elapsed, saved.signer + FASTEST * elapsed
        if lowest <= low:
            assert low - EPS <= start <= high + EPS
        else:
            assert start == lowest or low - EPS <= start <= high + EPS
    else:
        assert start == max(lowest, wall - max(0.0, saved.wall - saved.signer))
    assert start <= max(lowest, wall, saved.signer + FASTEST * max(0.0, steady_now - saved.steady)) + EPS


@given(STATE, TIME, STEADY, st.floats(min_value=0.0, max_value=1e6), st.floats(min_value=-1e9, max_value=1e9))
@settings(max_examples=500, deadline=None)
def test_a_restart_never_buys_more_than_a_running_signer_would_have(saved, floor, steady_gap, real, jump):
    """Same boot: restarting after `real` seconds, whatever the wall clock did meanwhile, resumes no
    further than a signer left running would have reached (at most 1.1 x real past the saved time)."""
    saved = ClockState(saved.signer, saved.wall, steady_gap, "boot-a")
    wall = saved.wall + real + jump
    start = start_time(saved, floor, wall, steady_gap + real, "boot-a")
    assert start <= max(floor, saved.signer + FASTEST * real) + EPS * max(1.0, saved.signer / 1e9)
    assert start >= saved.signer + real - EPS * max(1.0, saved.signer / 1e9)


def test_the_save_interval_is_a_module_constant_the_daemon_uses():
    assert clock_module.SAVE_INTERVAL_SECONDS == daemon_module.SAVE_INTERVAL_SECONDS == 10.0
