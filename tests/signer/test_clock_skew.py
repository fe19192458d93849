"""A change of the system clock never buys room in a rolling window.

The signer runs as its own process with its wall clock under the test's control
(tests.signer.skewed_clock): set back while it runs, or already behind when it starts, then put
right, as NTP would. Whatever the clock did, what was signed within a few seconds stays within
the 24 h limit. The clock itself (signer.clock) is checked against made-up time sources.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from signer.client import SignerClient, new_idempotency_key
from signer.clock import SignerClock, latest_recorded
from signer.store.db import connect, ensure_schema
from tests.conftest import FRIEND, SignerStack
from tests.signer.skewed_clock import OFFSET_ENV, set_offset

pytestmark = pytest.mark.chain
CENT = 10**16  # the dev policy: per_tx 0.01 ETH, 24h window 0.05 ETH
DAY_LIMIT = 5 * CENT
TWO_DAYS = 2 * 86400


class SkewedStack(SignerStack):
    """A signer process whose system clock is off by what `skew` last said."""

    def __init__(self, root: Path, rpc_url: str) -> None:
        super().__init__(root, rpc_url, signer={"broadcast": False})
        self.offset = root / "clock_offset"
        self.skew(0)

    def skew(self, seconds: float) -> None:
        set_offset(self.offset, seconds)

    def start(self, timeout: float = 30.0) -> SkewedStack:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.signer.skewed_clock", "--home", str(self.home), "signer", "serve",
             "--passphrase-file", str(self.passfile)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"),
            env={**os.environ, OFFSET_ENV: str(self.offset)},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"signer exited: {self.log.read_text()[-2000:]}")
            if self.socket.exists():
                try:
                    self.call_sync(self.admin_token, "status")
                    return self
                except Exception:  # noqa: BLE001 - not listening yet
                    pass
            time.sleep(0.05)
        raise AssertionError("signer did not come up")


@pytest.fixture()
def skewed(tmp_path, anvil):
    stack = SkewedStack(tmp_path, anvil.url)
    yield stack
    stack.close()


def sign_cents(stack: SignerStack, token: str, n: int) -> list[str]:
    async def run() -> list[str]:
        async with SignerClient(stack.socket, token) as client:
            return [(await client.sign({"chain_id": 31337, "to": FRIEND, "value": str(CENT)}))["status"]
                    for _ in range(n)]

    return asyncio.run(run())


def committed(stack: SignerStack) -> int:
    conn = sqlite3.connect(stack.paths.db)
    try:
        return sum(int(a) for (a,) in conn.execute("SELECT amount FROM spends WHERE state!='released'"))
    finally:
        conn.close()


def new_key(stack: SignerStack) -> None:
    stack.call_sync(stack.admin_token, "session_key.create", {"idempotency_key": new_idempotency_key("t"),
                                                              "chain_id": 31337})


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


# ---- the clock on its own ---------------------------------------------------------------------


class Source:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_clock_never_goes_back_and_keeps_real_time_while_the_wall_clock_is_behind():
    wall, mono = Source(1_000_000.0), Source(50.0)
    clock = SignerClock(wall=wall, mono=mono)
    assert clock() == 1_000_000.0
    wall.now -= TWO_DAYS  # set back
    mono.now += 10
    assert clock() == 1_000_010.0  # the last reading plus the real time since
    mono.now += 5
    wall.now += 1
    assert clock() == 1_000_015.0
    wall.now = 1_000_016.0 + 3600  # put right (and an hour on): followed forward
    mono.now += 1
    assert clock() == 1_000_016.0 + 3600


def test_a_spend_made_while_the_clock_was_behind_is_not_released_early_when_it_is_put_right():
    """Stamped at the real time, not at the last good reading: a full window after it was made."""
    wall, mono = Source(1_000_000.0), Source(0.0)
    clock = SignerClock(wall=wall, mono=mono)
    clock()
    wall.now -= TWO_DAYS
    mono.now += 6 * 3600  # six hours with the clock behind
    stamp = clock()
    assert stamp == 1_000_000.0 + 6 * 3600
    wall.now = 1_000_000.0 + 6 * 3600 + 86400 - 60  # put right, a minute short of a day after the spend
    mono.now += 86400 - 60
    assert clock() - 86400 < stamp  # still inside its 24 h window


def test_the_clock_starts_no_earlier_than_the_latest_record(tmp_path):
    conn = connect(tmp_path / "db")
    try:
        ensure_schema(conn)
        assert latest_recorded(conn) == 0.0
        conn.execute("INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at,"
                     " status) VALUES('r', 'c', 'k', 'sign', 'h', 5000.0, 'signed')")
        conn.execute("INSERT INTO spends(request_id, chain_id, asset, amount, ts, state)"
                     " VALUES('r', 1, 'native', '1', 7000.0, 'committed')")
        assert latest_recorded(conn) == 7000.0
        clock = SignerClock.resume(conn, wall=Source(100.0), mono=Source(0.0))
        assert clock() == 7000.0
    finally:
        conn.close()
