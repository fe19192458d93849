"""Hypothesis against the real daemon: random bursts, clock jumps, restarts and policy reloads
racing the bursts never break a limit.

Each example runs a fresh signer in-process (same code as `owlia signer serve`, reached over its
socket), with its clock under the test's control and broadcasting off so time can jump days.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from policies.loader import parse_policy
from policies.model import Policy
from signer.admin import issue_client
from signer.daemon import Daemon, init_home
from signer.replay import replay_decisions
from signer.store.audit import verify
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from signer.wire.protocol import Scope
from signer.wire.settings import SignerPaths, load_signer_config
from tests.conftest import DEV_POLICY, FRIEND, PASSPHRASE, audit_keys

pytestmark = [pytest.mark.chain, pytest.mark.slow]
MILLI = 10**15
PER_TX, WINDOWS = 10 * MILLI, {86400: 50 * MILLI, 7 * 86400: 200 * MILLI}

step = st.one_of(
    st.tuples(st.just("advance"), st.integers(min_value=60, max_value=3 * 86400)),
    st.tuples(st.just("burst"), st.lists(st.integers(min_value=1, max_value=15), min_size=1, max_size=8)),
    st.tuples(st.just("restart"), st.none()),
    # A policy reload (per_tx and 24 h limit in milli-ETH) racing a burst: a tightening applies
    # mid-burst, anything looser is only proposed and changes nothing.
    st.tuples(
        st.just("reload"),
        st.tuples(
            st.integers(1, 12),
            st.integers(5, 60),
            st.lists(st.integers(min_value=1, max_value=12), max_size=6),
        ),
    ),
)


def policy_text(per_tx_milli: int, day_milli: int) -> str:
    text = DEV_POLICY.read_text()
    text = text.replace('per_tx: "0.01"', f'per_tx: "0.{per_tx_milli:03d}"')
    return text.replace('24h: "0.05"', f'24h: "0.{day_milli:03d}"')


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def _scenario(root: Path, rpc_url: str, steps: list) -> None:
    home = root / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "chains": [{"id": 31337, "name": "anvil", "rpc_url": rpc_url, "dev": True}],
                "signer": {"socket": str(root / "s.sock"), "broadcast": False},
            }
        )
    )
    config = load_signer_config(home)
    paths = SignerPaths.from_config(home, config)
    init_home(paths, bytearray(PASSPHRASE), policy_file=DEV_POLICY, scrypt_n=2**10)
    token = issue_client(paths, "bot", Scope.SIGN, passphrase=bytearray(PASSPHRASE))[1]
    admin = paths.admin_token.read_text().strip()
    clock = Clock()

    async def boot() -> Daemon:
        daemon = Daemon(paths, config, bytearray(PASSPHRASE))
        daemon.engine.clock = clock
        await daemon.start()
        return daemon

    async def send(burst: list[int]) -> None:
        clients = [SignerClient(paths.socket, token) for _ in burst]
        try:
            await asyncio.gather(
                *(
                    c.sign({"chain_id": 31337, "to": FRIEND, "value": str(milli * MILLI)})
                    for c, milli in zip(clients, burst)
                )
            )
        finally:
            for c in clients:
                await c.close()

    in_force, in_force_text = (10, 50), DEV_POLICY.read_text()  # per_tx and 24 h limit, milli-ETH
    daemon = await boot()
    try:
        async with SignerClient(paths.socket, admin) as c:
            await c.call(
                "session_key.create",
                {"idempotency_key": new_idempotency_key(), "chain_id": 31337, "ttl_seconds": 60 * 86400},
            )
        for kind, arg in steps:
            if kind == "advance":
                clock.now += arg
            elif kind == "restart":
                await daemon.stop()
                daemon = await boot()
            elif kind == "reload":
                per_tx, day, burst = arg
                paths.policy.write_text(policy_text(per_tx, day))
                async with SignerClient(paths.socket, admin) as c:
                    await asyncio.gather(c.call("policy.reload"), send(burst))
                    if per_tx <= in_force[0] and day <= in_force[1]:  # only tighter: in force now
                        in_force, in_force_text = (per_tx, day), policy_text(per_tx, day)
                    expected = parse_policy(in_force_text).policy_hash()
                    assert (await c.status()).policy_hash == expected
            else:
                await send(arg)
    finally:
        await daemon.stop()

    conn = sqlite3.connect(paths.db)
    limits = deciding_limits(conn)
    spends = conn.execute(
        "SELECT ts, CAST(amount AS INTEGER), request_id FROM spends WHERE state!='released' ORDER BY ts"
    ).fetchall()
    for ts, amount, request_id in spends:
        per_tx, windows = limits[request_id]  # the policy that allowed this spend
        assert amount <= per_tx
        for period, limit in windows.items():
            in_window = sum(a for t, a, _ in spends if ts - period < t <= ts)
            assert in_window <= limit, (period, in_window, limit)
    assert verify(conn, paths.anchor, keys=audit_keys(paths)).ok
    assert replay_decisions(conn) == []  # every decision reproduced from the log alone
    conn.close()


def deciding_limits(conn: sqlite3.Connection) -> dict[str, tuple[int, dict[int, int]]]:
    """request_id -> (per_tx, {window seconds: limit}) of the policy its `sign.decided` record names."""
    policies: dict[str, tuple[int, dict[int, int]]] = {}
    out = {}
    for kind, body in conn.execute(
        "SELECT kind, body FROM audit WHERE kind IN ('policy.loaded', 'sign.decided') ORDER BY seq"
    ):
        body = json.loads(body)
        if kind == "policy.loaded":
            policy = Policy.model_validate(body["policy"])
            native = policy.index.asset_rule(31337, "native")
            policies[body["policy_hash"]] = (native.per_tx, {w.seconds: w.limit for w in native.windows})
        else:
            out[body["request_id"]] = policies[body["policy_hash"]]
    return out


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(step, min_size=1, max_size=12))
def test_committed_spend_never_exceeds_any_window(anvil, steps):
    root = Path(tempfile.mkdtemp(prefix="owp"))
    try:
        asyncio.run(_scenario(root, anvil.url, steps))
    finally:
        shutil.rmtree(root, ignore_errors=True)
