"""A change of the system clock never buys room in a rolling window, nor revives what expired.

The signer runs as its own process with its wall clock under the test's control
(tests.signer.skewed_clock): set back while it runs, or already behind when it starts, then put
right, as NTP would; or stepped a day forward. Whatever the clock did, what was signed within a
few seconds stays within the 24 h limit. The clock itself (signer.clock) is checked against
made-up time sources, by hand and with hypothesis, and so is how companion proofs are dated.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from signer.admin import issue_client
from signer.clock import CATCH_UP, SignerClock, latest_recorded
from signer.store import devices as devices_store
from signer.store.audit import AuditLog
from signer.store.db import connect, ensure_schema
from signer.store.writer import Writer
from signer.tier1.devices import DeviceRegistry
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.messages import MAX_CLOCK_SKEW, proof_is_fresh
from signer.wire.protocol import ErrorCode, RpcError, Scope
from tests.conftest import FRIEND, PASSPHRASE, SignerStack, as_json, throwaway_audit_keys
from tests.signer.skewed_clock import BOOT_ID_ENV, OFFSET_ENV, set_offset

pytestmark = pytest.mark.chain
CENT = 10**16  # the dev policy: per_tx 0.01 ETH, 24h window 0.05 ETH
DAY_LIMIT = 5 * CENT
TWO_DAYS = 2 * 86400
HOUR = 3600.0
EPS = 1e-4  # float rounding over a run of readings at ~1e9 s (an ulp there is ~2e-7 s)


class SkewedStack(SignerStack):
    """A signer process whose system clock is off by what `skew` last said, and whose boot id
    changes at `reboot` (the steady clock is the real one: only differences of it matter)."""

    def __init__(self, root: Path, rpc_url: str) -> None:
        super().__init__(root, rpc_url, signer={"broadcast": False})
        self.offset = root / "clock_offset"
        self.boot_id = root / "boot_id"
        self.skew(0)
        self.reboot()

    def skew(self, seconds: float) -> None:
        set_offset(self.offset, seconds)

    def reboot(self) -> None:
        """The next start looks like one after a reboot (call while the signer is stopped)."""
        self.boot_id.write_text(str(uuid.uuid4()))

    def env(self) -> dict[str, str]:
        return {**os.environ, OFFSET_ENV: str(self.offset), BOOT_ID_ENV: str(self.boot_id)}

    def serve_command(self) -> tuple[list[str], dict[str, str] | None]:
        argv, _ = super().serve_command()  # python -m bot.cli <args>: the same CLI, its clock set off
        return [sys.executable, "-m", "tests.signer.skewed_clock", *argv[3:]], self.env()

    def skewed_cli(self, *args: str, offset: Path | None = None) -> subprocess.CompletedProcess:
        """`owlia <args>` on this home, with this stack's boot id and system clock (or the one in `offset`)."""
        env = self.env() if offset is None else {**self.env(), OFFSET_ENV: str(offset)}
        return subprocess.run(
            [sys.executable, "-m", "tests.signer.skewed_clock", "--home", str(self.home), *args],
            text=True,
            capture_output=True,
            env=env,
            timeout=120,
        )


@pytest.fixture()
def skewed(tmp_path, anvil):
    stack = SkewedStack(tmp_path, anvil.url)
    yield stack
    stack.close()


def sign_cents(stack: SignerStack, token: str, n: int) -> list[str]:
    async def run() -> list[str]:
        async with SignerClient(stack.socket, token) as client:
            return [
                (await client.sign({"chain_id": 31337, "to": FRIEND, "value": str(CENT)})).status
                for _ in range(n)
            ]

    return asyncio.run(run())


def sign_one(stack: SignerStack, token: str) -> dict:
    async def run() -> dict:
        async with SignerClient(stack.socket, token) as client:
            return as_json(await client.sign({"chain_id": 31337, "to": FRIEND, "value": str(CENT)}))

    return asyncio.run(run())


def committed(stack: SignerStack) -> int:
    conn = sqlite3.connect(stack.paths.db)
    try:
        return sum(int(a) for (a,) in conn.execute("SELECT amount FROM spends WHERE state!='released'"))
    finally:
        conn.close()


def new_key(stack: SignerStack) -> None:
    stack.call_sync(
        stack.admin_token,
        "session_key.create",
        {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337},
    )


def test_setting_the_clock_back_and_right_again_never_reopens_the_window(skewed):
    stack = skewed.start()
    new_key(stack)
    bot = stack.client_token("bot")
    stack.skew(-TWO_DAYS)  # e.g. a spoofed NTP answer
    assert sign_cents(stack, bot, 6) == ["signed"] * 5 + ["pending_approval"]
    stack.skew(0)  # put right
    assert "signed" not in sign_cents(stack, bot, 3)
    assert committed(stack) <= DAY_LIMIT  # before the fix: 0.1 ETH within seconds


def test_starting_with_the_clock_behind_starts_from_the_last_record(skewed):
    stack = skewed.start()
    new_key(stack)
    bot = stack.client_token("bot")
    assert sign_cents(stack, bot, 2) == ["signed"] * 2
    stack.stop()
    stack.skew(-TWO_DAYS)  # e.g. a board without a battery-backed clock, before NTP syncs
    stack.start()
    assert sign_cents(stack, bot, 4) == ["signed"] * 3 + ["pending_approval"]
    stack.skew(0)
    assert "signed" not in sign_cents(stack, bot, 3)
    assert committed(stack) <= DAY_LIMIT
    conn = connect(stack.paths.db)
    try:
        stamps = [ts for (ts,) in conn.execute("SELECT ts FROM spends ORDER BY id")]
    finally:
        conn.close()
    assert stamps == sorted(stamps)  # never stamped before an earlier spend


def test_stepping_the_clock_a_day_forward_while_the_signer_runs_does_not_reopen_the_window(skewed):
    stack = skewed.start()
    new_key(stack)
    bot = stack.client_token("bot")
    assert sign_cents(stack, bot, 5) == ["signed"] * 5  # the dev policy's 24 h limit, spent
    stack.skew(25 * HOUR)  # e.g. a spoofed NTP answer: every spend above now looks a day old
    reply = sign_one(stack, bot)
    assert reply["status"] != "signed" and reply["rule_id"] == "limit.window.24h", reply
    assert committed(stack) == DAY_LIMIT  # before the fix: 0.1 ETH within seconds
    lag = stack.call_sync(stack.admin_token, "status")["clock_lag_seconds"]
    assert 24 * HOUR < lag <= 25 * HOUR  # the step is being absorbed, at most 10 % faster than real time
    assert "jumped" in stack.log.read_text()  # and the operator was told


def test_an_expired_client_token_stays_expired_when_the_clock_is_set_back(skewed):
    stack = skewed.start()
    client, token = issue_client(
        stack.paths, "brief", Scope.READ, ttl_seconds=2, passphrase=bytearray(PASSPHRASE)
    )
    assert stack.call_sync(token, "status")["client"]["name"] == "brief"
    time.sleep(max(0.0, client.expires_at - time.time()) + 0.5)  # the token's lifetime passing is under test
    with pytest.raises(SignerError) as expired:
        stack.call_sync(token, "status")
    assert expired.value.code == ErrorCode.UNAUTHENTICATED
    stack.skew(-TWO_DAYS)  # before the fix the server judged expiry by the system clock: valid again
    with pytest.raises(SignerError) as still:
        stack.call_sync(token, "status")
    assert still.value.code == ErrorCode.UNAUTHENTICATED


# ---- the clock on its own ---------------------------------------------------------------------


class Source:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_clock_never_goes_back_and_keeps_real_time_while_the_wall_clock_is_behind():
    wall, steady = Source(1_000_000.0), Source(50.0)
    clock = SignerClock(wall=wall, steady=steady)
    assert clock() == 1_000_000.0
    wall.now -= TWO_DAYS  # set back
    steady.now += 10
    assert clock() == 1_000_010.0  # the last reading plus the real time since
    steady.now += 5
    wall.now += 1
    assert clock() == 1_000_015.0
    wall.now = 1_000_016.0  # put right: followed at once, it is where the signer's time already is
    steady.now += 1
    assert clock() == 1_000_016.0


def test_a_forward_step_is_followed_at_most_ten_percent_faster_than_real_time(caplog):
    wall, steady = Source(1_000_000.0), Source(0.0)
    clock = SignerClock(wall=wall, steady=steady)
    clock()
    with caplog.at_level(logging.WARNING, logger="owlia.signer"):
        wall.now += HOUR  # an hour forward
        assert clock() == 1_000_000.0  # no real time has passed: nothing to follow yet
        steady.now += 100
        wall.now += 100
        assert clock() == pytest.approx(1_000_110.0)  # 100 s real, 110 s signer
        assert clock.lag() == pytest.approx(HOUR - 10)
        steady.now += HOUR / CATCH_UP
        wall.now += HOUR / CATCH_UP
        assert clock() == wall.now  # caught up, and following again
        steady.now += 1
        wall.now += 1.000_001  # drift, parts per million: followed exactly
        assert clock() == wall.now
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "the system clock jumped 3600 s forward"
    ]


def test_small_steps_and_putting_a_clock_right_are_not_warned_about(caplog):
    wall, steady = Source(1_000_000.0), Source(0.0)
    clock = SignerClock(wall=wall, steady=steady)
    with caplog.at_level(logging.WARNING, logger="owlia.signer"):
        wall.now += 30  # a half-minute NTP step
        steady.now += 1
        clock()
        wall.now -= TWO_DAYS
        steady.now += 1
        clock()
        wall.now += TWO_DAYS  # put right: the signer kept real time meanwhile, so it lags by seconds only
        steady.now += 1
        clock()
    assert not caplog.records
    assert clock.lag() < 30


def test_a_spend_made_while_the_clock_was_behind_is_not_released_early_when_it_is_put_right():
    """Stamped at the real time, not at the last good reading: a full window after it was made."""
    wall, steady = Source(1_000_000.0), Source(0.0)
    clock = SignerClock(wall=wall, steady=steady)
    clock()
    wall.now -= TWO_DAYS
    steady.now += 6 * 3600  # six hours with the clock behind
    stamp = clock()
    assert stamp == 1_000_000.0 + 6 * 3600
    wall.now = 1_000_000.0 + 6 * 3600 + 86400 - 60  # put right, a minute short of a day after the spend
    steady.now += 86400 - 60
    assert clock() - 86400 < stamp  # still inside its 24 h window


def test_the_clock_starts_no_earlier_than_the_latest_record(tmp_path):
    conn = connect(tmp_path / "db")
    try:
        ensure_schema(conn)
        assert latest_recorded(conn) == 0.0
        conn.execute(
            "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at,"
            " status) VALUES('r', 'c', 'k', 'sign', 'h', 5000.0, 'signed')"
        )
        conn.execute(
            "INSERT INTO spends(request_id, chain_id, asset, amount, ts, state)"
            " VALUES('r', 1, 'native', '1', 7000.0, 'committed')"
        )
        assert latest_recorded(conn) == 7000.0
        clock = SignerClock.resume(conn, wall=Source(100.0), steady=Source(0.0))
        assert clock() == 7000.0
    finally:
        conn.close()


# ---- the clock's bounds, for any history of the system clock (hypothesis) ----------------------

REAL = st.floats(min_value=0.0, max_value=2 * 86400.0, allow_nan=False)  # steady time between readings
JUMP = st.one_of(
    st.just(0.0), st.floats(min_value=-1e8, max_value=1e8, allow_nan=False)
)  # a step of the wall clock
HISTORY = st.lists(st.tuples(REAL, JUMP), max_size=40)


def replay(
    history: list[tuple[float, float]], wall: Source, steady: Source, clock: SignerClock
) -> list[tuple]:
    """(steady, signer time, wall) at each reading; the wall clock keeps real time between its jumps."""
    readings = []
    for real, jump in history:
        steady.now += real
        wall.now += real + jump
        readings.append((steady.now, clock(), wall.now))
    return readings


@given(HISTORY)
@settings(max_examples=300, deadline=None)
def test_the_signer_time_never_goes_back_and_never_runs_more_than_ten_percent_fast(history):
    """Unconditionally, not only from a reading that was not behind: each reading advances by at
    most (1 + CATCH_UP) times the steady time since the one before, so any run of them does too."""
    wall, steady = Source(1.7e9), Source(1e4)
    clock = SignerClock(wall=wall, steady=steady)
    readings = [(steady.now, clock(), wall.now), *replay(history, wall, steady, clock)]
    for i, (s0, t0, _) in enumerate(readings):
        for s1, t1, _ in readings[i:]:
            assert t1 >= t0
            assert s1 - s0 - EPS <= t1 - t0 <= (1 + CATCH_UP) * (s1 - s0) + EPS


@given(
    st.lists(st.tuples(REAL, st.floats(min_value=-1e8, max_value=0.0)), max_size=10),
    st.floats(min_value=0.0, max_value=1e7),
    st.lists(REAL, min_size=1, max_size=20),
)
@settings(max_examples=300, deadline=None)
def test_a_forward_step_is_caught_up_within_its_size_over_catch_up(before, step, after):
    """The wall clock set back any number of times (the signer is then ahead of it or level), then
    stepped forward by `step` and left alone: level again by step / CATCH_UP of real time."""
    wall, steady = Source(1.7e9), Source(1e4)
    clock = SignerClock(wall=wall, steady=steady)
    replay(before, wall, steady, clock)
    start = steady.now
    wall.now += step
    for real in after:
        steady.now += real
        wall.now += real
        now = clock()
        if steady.now - start >= step / CATCH_UP + EPS:
            assert now >= wall.now - EPS


@given(
    HISTORY,
    st.floats(min_value=61.0, max_value=1e9),
    st.lists(st.floats(0.0, 1.0), max_size=5),
    st.lists(REAL, max_size=5),
)
@settings(max_examples=300, deadline=None)
def test_a_far_future_glitch_that_lasts_a_second_moves_the_signer_by_about_a_second(
    history, glitch, during, later
):
    wall, steady = Source(1.7e9), Source(1e4)
    clock = SignerClock(wall=wall, steady=steady)
    replay(history, wall, steady, clock)
    before, real_wall, glitch_start = clock(), wall.now, steady.now
    wall.now += glitch
    for at in sorted(during):  # readings while the wall clock is wrong
        steady.now = glitch_start + at
        wall.now = real_wall + at + glitch
        clock()
    steady.now = glitch_start + 1.0
    wall.now = real_wall + 1.0  # the glitch is over
    assert clock() - before <= 1.0 + CATCH_UP + EPS
    for real in later:  # and it did not stick
        steady.now += real
        wall.now += real
        assert clock() <= max(before, real_wall) + (wall.now - real_wall) + CATCH_UP + EPS


# ---- companion proofs while the signer's clock catches up -------------------------------------


class Registry:
    """A DeviceRegistry on a throwaway store, with the signer's clock on made-up sources."""

    def __init__(self, root: Path) -> None:
        self.conn = connect(root / "signer.db")
        ensure_schema(self.conn)
        self.conn.executescript(devices_store.SCHEMA)
        self.reader = connect(root / "signer.db")
        self.audit = AuditLog(self.conn, root / "audit.anchor", keys=throwaway_audit_keys())
        self.writer = Writer(self.conn, on_commit=self.audit.write_anchor, on_rollback=self.audit.reload)
        self.wall, self.steady = Source(1_000_000.0), Source(0.0)
        self.clock = SignerClock(wall=self.wall, steady=self.steady)
        self.devices = DeviceRegistry(self.reader, self.writer, self.audit, self.clock, wall=self.wall)

    def advance(self, seconds: float, *, step: float = 0.0) -> None:
        self.steady.now += seconds
        self.wall.now += seconds + step

    def consume(self, proof: bytes, ts: float) -> None:
        asyncio.run(self.devices.consume_proof(proof, ts, "freeze.refused", {}))

    def refused(self, proof: bytes, ts: float) -> str:
        with pytest.raises(RpcError) as refusal:
            self.consume(proof, ts)
        assert refusal.value.code == ErrorCode.FORBIDDEN
        return refusal.value.message

    def remembered(self, proof: bytes) -> bool:
        digest = hashlib.sha256(proof).hexdigest()
        return (
            self.reader.execute("SELECT 1 FROM used_proofs WHERE digest=?", (digest,)).fetchone() is not None
        )

    def close(self) -> None:
        self.writer.close()
        self.audit.close()
        self.reader.close()
        self.conn.close()


@pytest.fixture()
def registry(tmp_path):
    reg = Registry(tmp_path)
    yield reg
    reg.close()


def test_the_bounds_of_a_proofs_time():
    assert proof_is_fresh(1000.0, 1000.0, 1000.0)
    assert proof_is_fresh(1000.0 - MAX_CLOCK_SKEW, 1000.0, 1000.0)
    assert not proof_is_fresh(1000.0 - MAX_CLOCK_SKEW - 1, 1000.0, 5000.0)  # the lower bound: the earlier
    assert proof_is_fresh(1000.0 - MAX_CLOCK_SKEW, 5000.0, 1000.0)  # the signer's clock ahead: the wall's
    assert proof_is_fresh(5000.0 + MAX_CLOCK_SKEW, 1000.0, 5000.0)  # the upper: the later of the two
    assert not proof_is_fresh(5000.0 + MAX_CLOCK_SKEW + 1, 1000.0, 5000.0)
    assert not proof_is_fresh(1000.0 + MAX_CLOCK_SKEW + 1, 1000.0, 0.0)  # a clock set back widens nothing
    assert not proof_is_fresh(float("nan"), 1000.0, 1000.0)


def test_a_proof_dated_by_the_phone_is_accepted_while_the_signers_clock_lags(registry):
    registry.clock()
    registry.advance(10, step=25 * HOUR)  # a legitimate forward correction: the signer's time now trails it
    assert registry.clock.lag() > 24 * HOUR
    registry.consume(b"freeze now", registry.wall.now)  # the phone's real time
    assert "replay" in registry.refused(b"freeze now", registry.wall.now)  # still once only
    registry.advance(30 * 60)  # half an hour on, another proof: the first is still remembered
    registry.consume(b"top up", registry.wall.now)
    assert registry.remembered(b"freeze now")
    stale = registry.clock() - MAX_CLOCK_SKEW - 1
    assert "stale" in registry.refused(b"an old proof", stale)  # older than 2 min by the signer's clock
    assert "future" in registry.refused(b"ahead", registry.wall.now + MAX_CLOCK_SKEW + 5)


def test_an_accepted_proof_is_never_forgotten(registry):
    registry.clock()
    registry.advance(10, step=25 * HOUR)
    ts = registry.wall.now
    registry.consume(b"freeze now", ts)
    registry.advance(25 * HOUR / CATCH_UP + 1000)  # the signer's clock has caught up and passed the proof
    registry.consume(b"later", registry.wall.now)
    registry.advance(0, step=-(registry.wall.now - ts))  # the system clock set back to the proof's time
    assert registry.remembered(b"freeze now")
    assert "replay" in registry.refused(b"freeze now", ts)


def test_the_companion_is_not_locked_out_when_the_signers_clock_stays_ahead(registry):
    """A wrong +1 h step lasting 22 min, then put right: the signer's clock, which never goes back,
    is 132 s ahead of real time for good. The phone's proofs (real time) must still pass: the kill
    switch has to work then too."""
    registry.clock()
    registry.advance(1, step=HOUR)
    for _ in range(22 * 60):
        registry.advance(1)
        registry.clock()
    registry.advance(0, step=-HOUR)  # put right
    ahead = registry.clock() - registry.wall.now
    assert ahead > MAX_CLOCK_SKEW
    registry.advance(7 * 24 * HOUR)
    registry.consume(b"freeze", registry.wall.now)  # a week later, and still
    assert "replay" in registry.refused(b"freeze", registry.wall.now)
