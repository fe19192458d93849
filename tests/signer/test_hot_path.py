"""Shortcuts on the signing hot path, and what each must not change.

- group commit must actually group when many clients are waiting, and a lone client must still
  commit inline (signer.backlog tells the engine which case it is in);
- request hashes moved to pydantic's own serialization: keys recorded with the old hash replay;
- the event loop is uvloop unless told otherwise (policies.kernel.aio), the daemon's asyncio's own.
"""

from __future__ import annotations

import asyncio
import shutil
import socket

import pytest

from policies.kernel.aio import LOOP_ENV, loop_name
from signer.backlog import Backlog
from signer.intents import legacy_request_hash
from signer.serve import DAEMON_LOOP
from signer.store import audit as audit_store
from signer.store.db import connect
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.protocol import ErrorCode
from signer.wire.requests import SignRequestParams
from tests.conftest import FRIEND, InProcessSigner, as_json, audit_keys, signer_db


def transfer(value: int) -> dict:
    return {"chain_id": 31337, "to": FRIEND, "value": str(value)}


def test_the_backlog_sees_unread_bytes_until_they_are_read_or_the_socket_is_dropped():
    backlog = Backlog()
    ours, theirs = socket.socketpair()
    try:
        backlog.add(ours.fileno())
        assert not backlog.waiting()
        theirs.sendall(b'{"jsonrpc": "2.0"}\n')
        assert backlog.waiting()
        ours.recv(1024)
        assert not backlog.waiting()
        theirs.sendall(b"x")
        backlog.remove(ours.fileno())
        assert not backlog.waiting()
        backlog.remove(ours.fileno())  # twice, or after a close: harmless
    finally:
        ours.close()
        theirs.close()
        backlog.close()
    assert not backlog.waiting()


async def _signed(daemon_home: InProcessSigner, clients: int, each: int, tag: str) -> list[dict]:
    conns = [SignerClient(daemon_home.paths.socket, daemon_home.token) for _ in range(clients)]
    for conn in conns:
        await conn.connect()
    try:

        async def one(i: int, conn: SignerClient) -> list[dict]:
            return [
                as_json(await conn.sign(transfer(1000), idempotency_key=f"{tag}-{i:02d}-{j:03d}"))
                for j in range(each)
            ]

        batches = await asyncio.gather(*(one(i, c) for i, c in enumerate(conns)))
    finally:
        for conn in conns:
            await conn.close()
    return [r for batch in batches for r in batch]


def test_waiting_clients_share_commits_and_a_lone_client_commits_inline(anvil, tmp_path):
    home = InProcessSigner(tmp_path, anvil.url)

    async def run() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        daemon = home.daemon()
        await daemon.start()
        writer = daemon.writer
        try:
            async with SignerClient(home.paths.socket, home.admin_token) as admin:
                await admin.call(
                    "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                )
            before = (writer.commits, writer.units_committed, writer.inline_commits)
            alone = await _signed(home, 1, 20, "alone")
            mid = (writer.commits, writer.units_committed, writer.inline_commits)
            crowd = await _signed(home, 16, 8, "crowd")
            after = (writer.commits, writer.units_committed, writer.inline_commits)
            # The dev policy's daily limit escalates some (and past ten waiting, denies them): those are
            # committed (and counted) all the same.
            assert {r["status"] for r in alone + crowd} <= {"signed", "pending_approval", "denied"}
            assert alone[0]["status"] == "signed"
            return tuple(m - b for m, b in zip(mid, before)), tuple(a - m for a, m in zip(after, mid))
        finally:
            await daemon.stop()

    try:
        (commits1, units1, inline1), (commits16, units16, inline16) = asyncio.run(run())
    finally:
        shutil.rmtree(home.sockdir, ignore_errors=True)
    assert commits1 == units1 == inline1 == 20  # alone: every request committed on the loop
    assert units16 == 16 * 8
    assert commits16 < units16 * 3 // 4, (commits16, units16)  # a crowd: fsyncs shared
    assert inline16 < units16 // 2
    conn = connect(home.paths.db, readonly=True)
    try:
        assert audit_store.verify(conn, home.paths.anchor, keys=audit_keys(home.paths)).ok
    finally:
        conn.close()


def test_a_key_recorded_under_the_old_request_hash_still_replays(anvil, tmp_path):
    home = InProcessSigner(tmp_path, anvil.url)
    params = {"idempotency_key": "legacy-key-0001", "intent": transfer(1000), "source": "agent"}

    async def sign(body: dict) -> dict:
        daemon = home.daemon()
        await daemon.start()
        try:
            async with SignerClient(home.paths.socket, home.admin_token) as admin:
                if not daemon.keys.active_ids():
                    await admin.call(
                        "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                    )
            async with SignerClient(home.paths.socket, home.token) as client:
                return await client.call_json("sign.request", body)
        finally:
            await daemon.stop()

    try:
        first = asyncio.run(sign(params))
        old_hash = legacy_request_hash(SignRequestParams.model_validate(params))
        conn = signer_db(home.paths)
        try:  # what a database written by an earlier release holds (written as the signer writes, MACs and all)
            conn.execute(
                "UPDATE requests SET request_hash=? WHERE idempotency_key=?", (old_hash, "legacy-key-0001")
            )
            conn.commit()
        finally:
            conn.close()
        again = asyncio.run(sign(params))
        with pytest.raises(SignerError) as other:
            asyncio.run(sign({**params, "intent": transfer(2000)}))
    finally:
        shutil.rmtree(home.sockdir, ignore_errors=True)
    assert first["status"] == "signed"
    assert again["replayed"] is True and again["request_id"] == first["request_id"]
    assert other.value.code == ErrorCode.IDEMPOTENCY_CONFLICT


def test_the_event_loop_is_uvloop_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv(LOOP_ENV, raising=False)
    assert loop_name() == "uvloop"  # a dependency on Linux
    assert loop_name(prefer=DAEMON_LOOP) == "asyncio"  # the signer daemon's own default
    monkeypatch.setenv(LOOP_ENV, "asyncio")
    assert loop_name() == "asyncio"
    monkeypatch.setenv(LOOP_ENV, "uvloop")
    assert loop_name(prefer=DAEMON_LOOP) == "uvloop"


def test_the_signers_tests_run_on_the_daemons_loop():
    """tests/conftest.py runs each module's `asyncio.run` on the loop its code is deployed on."""

    async def running() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert asyncio.run(running()).startswith("asyncio") == (loop_name(prefer=DAEMON_LOOP) == "asyncio")
