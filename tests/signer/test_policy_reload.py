"""Changing the policy while the signer runs: tightening applies at the next request, loosening
waits for the companion, a bad file changes nothing, and the log still replays every decision."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from signer.replay import replay_decisions
from signer.store import audit as audit_store
from signer.store.db import connect
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.protocol import ErrorCode
from tests.conftest import DEV_POLICY, FRIEND, InProcessSigner, as_json, audit_keys, signer_db

pytestmark = pytest.mark.chain

CENT = 10**16
BASE = DEV_POLICY.read_text()
TIGHT = BASE.replace('per_tx: "0.01"', 'per_tx: "0.005"')
LOOSE = BASE.replace('per_tx: "0.01"', 'per_tx: "0.02"')


def transfer(value: int) -> dict:
    return {"chain_id": 31337, "to": FRIEND, "value": str(value)}


class Running:
    """An in-process daemon with a funded-enough session key and its two clients."""

    def __init__(self, signer: InProcessSigner) -> None:
        self.signer = signer
        self.daemon = signer.daemon()

    async def __aenter__(self) -> Running:
        await self.daemon.start()
        await self.admin("session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337})
        return self

    async def __aexit__(self, *exc) -> None:
        await self.daemon.stop()

    async def admin(self, method: str, params: dict | None = None):
        async with SignerClient(self.signer.paths.socket, self.signer.admin_token) as client:
            return await client.call_json(method, params)

    async def sign(self, value: int) -> dict:
        async with SignerClient(self.signer.paths.socket, self.signer.token) as client:
            return as_json(await client.sign(transfer(value), idempotency_key=new_idempotency_key()))

    def write_policy(self, text: str) -> None:
        self.signer.paths.policy.write_text(text)  # keeps its 0600 mode


@pytest.fixture()
def signer(tmp_path, anvil):
    made = InProcessSigner(tmp_path, anvil.url)
    yield made
    import shutil

    shutil.rmtree(made.sockdir, ignore_errors=True)


def audit_kinds(db: Path) -> list[tuple[str, dict]]:
    import json

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [
            (kind, json.loads(body))
            for kind, body in conn.execute("SELECT kind, body FROM audit ORDER BY seq")
        ]
    finally:
        conn.close()


def test_a_tightening_applies_from_the_next_request_and_every_decision_still_replays(signer):
    async def scenario():
        async with Running(signer) as run:
            assert (await run.sign(CENT))["status"] == "signed"
            old_hash = (await run.admin("status"))["policy_hash"]
            run.write_policy(TIGHT)
            # Requests racing the reload are each decided wholly under one policy or the other.
            racing = [asyncio.create_task(run.sign(CENT // 2)) for _ in range(6)]
            result = await run.admin("policy.reload")
            await asyncio.gather(*racing)
            assert result["status"] == "applied" and result["policy_hash"] != old_hash
            assert (await run.admin("status"))["policy_hash"] == result["policy_hash"]
            after = await run.sign(CENT)  # allowed a moment ago, over the new per_tx now
            assert after["status"] == "pending_approval" and "per_tx" in after["rule_id"], after
            assert (await run.admin("policy.reload"))["status"] == "unchanged"
            return old_hash, result["policy_hash"]

    old_hash, new_hash = asyncio.run(scenario())
    entries = audit_kinds(signer.paths.db)
    loaded = [body for kind, body in entries if kind == "policy.loaded"]
    assert [b["policy_hash"] for b in loaded] == [old_hash, new_hash]
    assert loaded[-1]["why"] == "reload: tightened"
    decided = {body["policy_hash"] for kind, body in entries if kind == "sign.decided"}
    assert decided == {old_hash, new_hash}
    reader = connect(signer.paths.db, readonly=True)
    try:
        assert replay_decisions(reader) == []
        assert audit_store.verify(reader, signer.paths.anchor, keys=audit_keys(signer.paths)).ok
    finally:
        reader.close()


def test_a_loosening_while_running_keeps_the_old_policy_and_asks_once(signer):
    async def scenario():
        async with Running(signer) as run:
            old_hash = (await run.admin("status"))["policy_hash"]
            run.write_policy(LOOSE)
            first = await run.admin("policy.reload")
            assert first["status"] == "proposed" and first["policy_hash"] == old_hash
            assert any("per_tx 0.01 -> 0.02" in w for w in first["widens"])
            again = await run.admin("policy.reload")
            assert (
                again["request_id"] == first["request_id"]
            )  # one open proposal per policy, not one per reload
            assert (await run.admin("status"))["policy_hash"] == old_hash
            assert (await run.sign(CENT * 3 // 2))["status"] == "pending_approval"

    asyncio.run(scenario())


def test_a_bad_or_exposed_policy_file_changes_nothing(signer):
    async def scenario():
        async with Running(signer) as run:
            old_hash = (await run.admin("status"))["policy_hash"]
            run.write_policy(BASE.replace('per_tx: "0.01"', 'per_tx: "zero"'))
            with pytest.raises(SignerError) as bad:
                await run.admin("policy.reload")
            assert bad.value.code == ErrorCode.INVALID_PARAMS and "policy.yaml" in bad.value.message
            assert "the one in force stays" in bad.value.message
            run.write_policy(TIGHT)
            signer.paths.policy.chmod(0o644)
            with pytest.raises(SignerError, match="has mode 0644; run `chmod 600") as exposed:
                await run.admin("policy.reload")
            assert exposed.value.code == ErrorCode.INVALID_PARAMS
            signer.paths.policy.chmod(0o600)
            with pytest.raises(SignerError) as forbidden:  # a bot's sign token cannot reload the policy
                async with SignerClient(signer.paths.socket, signer.token) as client:
                    await client.call("policy.reload")
            assert forbidden.value.code == ErrorCode.FORBIDDEN
            assert (await run.admin("status"))["policy_hash"] == old_hash
            assert (await run.sign(CENT))["status"] == "signed"  # the old per_tx still holds

    asyncio.run(scenario())


def test_a_new_longer_window_counts_spends_older_than_any_window_loaded_so_far(signer):
    """Only a 24 h window at start, so the ledger held one day. A reload adds a 7 d window: the
    0.15 ETH spent three days ago must count from the first request after it."""
    day_only = BASE.replace('windows: {24h: "0.05", 7d: "0.2"}', 'windows: {24h: "0.05"}')
    with_week = BASE.replace('windows: {24h: "0.05", 7d: "0.2"}', 'windows: {24h: "0.05", 7d: "0.16"}')
    signer.paths.policy.write_text(day_only)
    db = signer_db(signer.paths)  # a spend from before any window loaded so far, as the signer wrote it
    db.execute(
        "INSERT INTO spends(request_id, chain_id, asset, amount, usd_micros, ts, state)"
        " VALUES('req_old', 31337, 'native', ?, NULL, ?, 'committed')",
        (str(15 * CENT), time.time() - 3 * 86400),
    )
    db.commit()
    db.close()

    async def scenario():
        async with Running(signer) as run:
            run.write_policy(with_week)
            assert (await run.admin("policy.reload"))["status"] == "applied"
            assert (await run.sign(CENT))["status"] == "signed"  # 0.15 + 0.01 = 0.16: just fits
            over = await run.sign(CENT)
            assert over["status"] == "pending_approval" and "7d" in over["rule_id"], over

    asyncio.run(scenario())


def test_sighup_reloads_a_running_signer_process(make_stack):
    stack = make_stack().start()
    old_hash = stack.call_sync(stack.admin_token, "status")["policy_hash"]
    stack.paths.policy.write_text(TIGHT)
    stack.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while stack.call_sync(stack.admin_token, "status")["policy_hash"] == old_hash:
        assert time.monotonic() < deadline, "SIGHUP did not reload the policy"
        time.sleep(0.05)
    done = stack.owlia("signer", "reload")
    assert done.returncode == 0 and '"unchanged"' in done.stdout, done.stderr
    stack.paths.policy.write_text("not: [a policy")
    stack.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "policy not reloaded" not in stack.log.read_text():  # the daemon has handled this SIGHUP
        assert time.monotonic() < deadline, "SIGHUP with a bad policy file was not logged"
        time.sleep(0.05)
    assert stack.process.poll() is None  # a bad file is logged, the daemon keeps serving
    refused = stack.owlia("signer", "reload")
    assert refused.returncode != 0 and "the one in force stays" in refused.stderr + refused.stdout
