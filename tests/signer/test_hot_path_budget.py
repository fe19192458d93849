"""What one Tier 2 request costs, counted rather than timed, so a regression shows on a busy machine.

A lone signed request must stay one durable commit (WAL, `synchronous=FULL`: one fsync of the WAL)
with a fixed set of SQL statements, a bounded number of WAL pages, and a bounded amount of Python.
Each budget below is what the path costs today plus headroom; a change that needs more must raise
the budget here on purpose, with the benchmark run that justifies it (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections import Counter
from pathlib import Path

import yaml
from hypothesis import given, strategies as st

from policies.loader import parse_policy
from signer.store import audit as audit_store
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from tests.conftest import DEV_POLICY, FRIEND, InProcessSigner, audit_keys

REQUESTS = 20
PAGE = 4096
# Per lone signed request. Statements as SQLite traces them (a trigger's statements trace under the
# statement that fired it, and `executemany` once per row).
READER_STATEMENTS = {
    "SELECT expires_at, revoked_at FROM clients": 1,  # the token re-check (a revoke by the CLI)
    "SELECT request_hash, outcome, request_id FROM requests": 1,
}  # the idempotency key
WRITER_STATEMENTS = {
    "BEGIN IMMEDIATE": 1,
    "PRAGMA data_version": 1,
    "INSERT INTO requests": 3,
    "INSERT INTO spends": 3,
    "INSERT INTO audit": 2,
    # the state head (signer.store.state_head): the digests read, one row written
    "SELECT tbl, acc FROM table_digests": 1,
    "INSERT INTO state_head": 1,
    "COMMIT": 1,
}
MAX_WAL_PAGES = (
    12.0  # mean pages a commit appends to the WAL (9-10 today: the rows, their indexes, the digests)
)
# Python function calls (and coroutine resumptions) in this process per request, the client's
# included: about 505 today, 15 % headroom. Deterministic, unlike time on a shared machine.
MAX_PYTHON_CALLS = 580


def _statement(sql: str) -> str:
    for known in (*READER_STATEMENTS, *WRITER_STATEMENTS):
        if sql.startswith(known):
            return known
    return sql[:80]


def _roomy_policy(tmp_path: Path) -> Path:
    """The dev policy with limits no run of this test reaches (as bench/signer_bench.py sets them)."""
    raw = parse_policy(DEV_POLICY.read_text()).model_dump(mode="json")
    for asset in raw["assets"]:
        asset["per_tx"], asset["windows"] = "1", {"24h": "1000000", "7d": "1000000"}
    raw["rate_limits"] = {"tx_per_hour": 10**9, "new_recipients_per_day": 10**6}
    path = tmp_path / "roomy.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_lone_signed_request_is_one_commit_and_stays_within_its_budget(anvil, tmp_path):
    home = InProcessSigner(tmp_path, anvil.url, policy=_roomy_policy(tmp_path))

    async def window(daemon, client, tag: str) -> dict:  # noqa: ANN001 - the daemon and a connected client
        """REQUESTS lone requests, counted."""
        reads: Counter[str] = Counter()
        writes: Counter[str] = Counter()
        calls = [0]

        def profile(frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
            if event == "call":
                calls[0] += 1

        writer, wal, pages = daemon.writer, Path(f"{home.paths.db}-wal"), 0
        daemon.reader.set_trace_callback(lambda sql: reads.update([_statement(sql)]))
        daemon.writer_conn.set_trace_callback(lambda sql: writes.update([_statement(sql)]))
        before = (writer.commits, writer.units_committed, writer.inline_commits)
        try:
            for i in range(REQUESTS):
                size = wal.stat().st_size
                sys.setprofile(profile)
                try:
                    reply = await client.sign(
                        {"chain_id": 31337, "to": FRIEND, "value": "1000"}, idempotency_key=f"{tag}-{i:04d}"
                    )
                finally:
                    sys.setprofile(None)
                assert reply.status == "signed", reply
                grown = wal.stat().st_size - size
                if grown > 0:  # a background checkpoint restarted the WAL meanwhile: not counted
                    pages += grown // (PAGE + 24)
        finally:
            daemon.reader.set_trace_callback(None)
            daemon.writer_conn.set_trace_callback(None)
        commits, units, inline = (
            a - b for a, b in zip((writer.commits, writer.units_committed, writer.inline_commits), before)
        )
        return {
            "commits": commits,
            "units": units,
            "inline": inline,
            "wal_pages": pages / REQUESTS,
            "reads": {k: v / REQUESTS for k, v in reads.items()},
            "writes": {k: v / REQUESTS for k, v in writes.items()},
            "calls": calls[0] / REQUESTS,
        }

    async def run() -> tuple[tuple[str, int], dict]:
        daemon = home.daemon()
        await daemon.start()
        try:
            durability = (
                daemon.writer_conn.execute("PRAGMA journal_mode").fetchone()[0],
                daemon.writer_conn.execute("PRAGMA synchronous").fetchone()[0],
            )
            async with SignerClient(home.paths.socket, home.admin_token) as admin:
                await admin.call(
                    "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                )
            async with SignerClient(home.paths.socket, home.token) as client:
                for i in range(3):  # first reads of the chain (nonce, fees) and of the database
                    await client.sign(
                        {"chain_id": 31337, "to": FRIEND, "value": "1000"}, idempotency_key=f"warm-{i:04d}"
                    )
                for attempt in range(3):
                    got = await window(daemon, client, f"budget{attempt}")
                    if got["units"] == got["inline"]:
                        break
                    # Something else committed through the writer thread meanwhile (the clock's periodic
                    # save, every SAVE_INTERVAL_SECONDS on a slow machine): not the request's cost; again.
        finally:
            await daemon.stop()
        return durability, got

    try:
        durability, got = asyncio.run(run())
    finally:
        shutil.rmtree(home.sockdir, ignore_errors=True)
    assert durability == ("wal", 2)  # FULL: the WAL is synced at every commit
    assert got["commits"] == got["units"] == got["inline"] == REQUESTS, got  # one commit each, on the loop
    assert got["reads"] == READER_STATEMENTS, got
    assert got["writes"] == WRITER_STATEMENTS, got
    assert 0 < got["wal_pages"] <= MAX_WAL_PAGES, got
    assert got["calls"] <= MAX_PYTHON_CALLS, got


@given(
    seq=st.integers(min_value=0, max_value=2**62),
    head=st.binary(min_size=32, max_size=32),
    mac=st.binary(min_size=32, max_size=32),
)
def test_the_anchor_is_the_json_it_always_was(seq, head, mac):
    """Formatted by hand on the commit path; byte for byte what `json.dumps` wrote before, padded."""
    import json

    expected = json.dumps({"seq": seq, "hash": head.hex(), "mac": mac.hex()}).encode()
    expected = expected.ljust(audit_store.ANCHOR_BYTES - 1) + b"\n"
    assert audit_store.anchor_bytes(seq, head.hex(), mac.hex()) == expected


def test_the_counted_path_writes_a_chain_that_verifies(anvil, tmp_path):
    """The budget test's daemon writes a chain `owlia audit verify` accepts (nothing skipped for speed)."""
    home = InProcessSigner(tmp_path, anvil.url)

    async def run() -> None:
        daemon = home.daemon()
        await daemon.start()
        try:
            async with SignerClient(home.paths.socket, home.admin_token) as admin:
                await admin.call(
                    "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
                )
            async with SignerClient(home.paths.socket, home.token) as client:
                for i in range(5):
                    reply = await client.sign(
                        {"chain_id": 31337, "to": FRIEND, "value": "1000"}, idempotency_key=f"chain-{i:04d}"
                    )
                    assert reply.status == "signed"
        finally:
            await daemon.stop()

    try:
        asyncio.run(run())
    finally:
        shutil.rmtree(home.sockdir, ignore_errors=True)
    from signer.store.db import connect

    conn = connect(home.paths.db, readonly=True)
    try:
        report = audit_store.verify(conn, home.paths.anchor, keys=audit_keys(home.paths))
    finally:
        conn.close()
    assert report.ok, report.problems
