"""A commit made on the event loop writes the audit anchor after the loop's current step (after the
committing request has sent its reply): the anchor may lag the log by that step, never run ahead of
it, never go back to an older head, and is written at close if still due."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings, strategies as st

from signer.store.audit import AuditKeys, AuditLog, read_anchor, verify
from signer.store.db import connect, ensure_schema
from signer.store.writer import Writer

KEYS = AuditKeys(chain=b"c" * 32, anchor=b"a" * 32)


def _commit(conn, audit, i: int) -> None:
    conn.execute("BEGIN IMMEDIATE")
    audit.append("test.event", {"i": i})
    conn.execute("COMMIT")


def test_the_anchor_follows_an_inline_commit_once_the_step_ends(tmp_path):
    conn = connect(tmp_path / "signer.db")
    ensure_schema(conn)
    audit = AuditLog(conn, tmp_path / "audit.anchor", keys=KEYS)
    writer = Writer(
        conn, on_commit=audit.write_anchor, on_inline_commit=audit.write_anchor_soon, checkpoint_every=None
    )

    async def run() -> None:
        await writer.run(lambda c: audit.append("first", {}))  # on the writer thread: anchor written at once
        assert read_anchor(tmp_path / "audit.anchor")[0] == 1
        await writer.run(lambda c: audit.append("second", {}), inline=True)
        assert writer.inline_commits == 1
        assert (
            read_anchor(tmp_path / "audit.anchor")[0] == 1
        )  # this step (the reply) first: lags, never ahead
        assert audit.committed[0] == 2  # what checkpoints sign is the committed head, at once
        await asyncio.sleep(0)
        assert read_anchor(tmp_path / "audit.anchor")[0] == 2

    try:
        asyncio.run(run())
    finally:
        writer.close()
    audit.close()
    report = verify(conn, tmp_path / "audit.anchor", keys=KEYS)
    assert report.ok and report.records == 2, report.problems
    conn.close()


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(range(6)))
def test_the_anchor_never_goes_back_whatever_order_the_writes_land_in(tmp_path_factory, order):
    tmp_path = tmp_path_factory.mktemp("anchor")
    conn = connect(tmp_path / "signer.db")
    ensure_schema(conn)
    audit = AuditLog(conn, tmp_path / "audit.anchor", keys=KEYS)
    heads = []
    for i in range(6):
        _commit(conn, audit, i)
        heads.append(audit.head)
    for i in order:  # deferred writes and immediate ones, landing late and out of order
        audit._write_anchor(*heads[i], i + 1)  # the epoch grows with every commit, as the state head's does
        seq, _, _, epoch = read_anchor(tmp_path / "audit.anchor")
        landed = order[: order.index(i) + 1]
        assert (seq, epoch) == (max(heads[j][0] for j in landed), max(landed) + 1)
    audit.close()
    assert verify(conn, tmp_path / "audit.anchor", keys=KEYS).ok
    conn.close()


def test_a_due_anchor_is_written_at_close(tmp_path):
    conn = connect(tmp_path / "signer.db")
    ensure_schema(conn)
    audit = AuditLog(conn, tmp_path / "audit.anchor", keys=KEYS)

    loop = asyncio.new_event_loop()

    def step() -> None:
        _commit(conn, audit, 0)
        audit.write_anchor_soon()  # scheduled for the next turn of the loop, which never comes
        loop.stop()

    loop.call_soon(step)
    loop.run_forever()
    loop.close()
    assert read_anchor(tmp_path / "audit.anchor") is None
    audit.close()
    assert read_anchor(tmp_path / "audit.anchor")[0] == 1
    assert verify(conn, tmp_path / "audit.anchor", keys=KEYS).ok
    conn.close()
