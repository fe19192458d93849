"""The companion witnesses the signer's audit log through the real bridge and reports a rollback.

The signer signs a checkpoint of its committed audit head into every `approvals.state` reply; the
companion's Watch keeps the latest in its home. Root on the signer's host, holding the master key,
then cuts the log short and writes an anchor that verifies: `owlia audit verify` alone cannot tell,
but the companion's next look at the signer's state reports that the log went back.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3

import pytest

from companion_bridge.companion.client import Companion
from companion_bridge.companion.watch import WITNESS_FILE
from signer.keystore import MasterKey
from signer.tier1.audit_witness import make_checkpoint
from signer.tier1.identity import SignerIdentity
from signer.wire.witness import Witness
from tests.companion.conftest import Tier1
from tests.conftest import signer_db

pytestmark = [pytest.mark.chain]


def cut_tail_as_key_holder(tier1: Tier1, records: int) -> None:
    """Root with the master key: the log cut short, then the state head bound to the shorter log and
    the anchor rewritten to match, as the key holder's own signer process would write them."""
    stack = tier1.stack
    conn = sqlite3.connect(stack.paths.db, isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_delete")
    (last,) = conn.execute("SELECT max(seq) FROM audit").fetchone()
    conn.execute("DELETE FROM audit WHERE seq>?", (last - records,))
    conn.close()
    signer_db(stack.paths).close()  # binds the state to the log's new head and moves the anchor


def test_the_companion_reports_a_log_that_went_back(tier1: Tier1):
    async def first_look() -> Companion:
        companion = await tier1.paired()  # connecting asks for the signer's state in the background
        witness = companion.wallet.home / WITNESS_FILE
        for _ in range(100):
            if witness.exists():
                break
            await asyncio.sleep(0.05)
        await companion.close()
        return companion

    companion = asyncio.run(first_look())
    witness = companion.wallet.home / WITNESS_FILE
    held = json.loads(witness.read_text())
    assert held["seq"] > 0 and held["signer_sig"]

    tier1.stack.stop()
    cut_tail_as_key_holder(tier1, 6)
    assert tier1.stack.owlia("audit", "verify", "--no-replay").returncode == 0  # consistent, re-anchored
    tier1.stack.start()

    warnings: list[str] = []

    async def second_look() -> Companion:
        again = Companion(companion.wallet, tier1.bridge.url)
        again.warn = warnings.append
        await again.connect()
        again.watch.settle(await again.call("approvals.state"))
        await again.close()
        return again

    again = asyncio.run(second_look())
    assert again.watch.audit_alarms and "went back" in again.watch.audit_alarms[0]
    assert any("audit log went back" in w and "--against-companion" in w for w in warnings)
    assert json.loads(witness.read_text()) == held  # it never moves back with the signer
    verified = tier1.stack.owlia("audit", "verify", "--no-replay", "--against-companion", str(witness))
    assert verified.returncode == 1 and "truncated" in verified.stdout


def test_the_whole_home_put_back_by_a_thief_starts_but_the_companion_sees_it(tier1: Tier1):
    """A copy of the signer's home (database and anchor file) put back by someone with its files and no
    passphrase: every check at start passes, since this is a state the signer really had. Only the
    companion, which saw a later one, can tell; it says so, and the offline check agrees."""
    stack = tier1.stack
    stack.stop()
    old = stack.root / "old-home"
    shutil.copytree(stack.paths.home, old)
    stack.start()
    stack.client_token("later")  # the signer moves on after the copy was taken

    async def look(companion: Companion | None = None) -> Companion:
        companion = companion or await tier1.paired()
        companion.watch.settle(await companion.call("approvals.state"))
        return companion

    async def first_look() -> Companion:
        companion = await look()
        await companion.close()
        return companion

    companion = asyncio.run(first_look())
    witness = companion.wallet.home / WITNESS_FILE
    held = json.loads(witness.read_text())
    assert held["epoch"] > 0

    stack.stop()
    shutil.rmtree(stack.paths.home)
    shutil.copytree(old, stack.paths.home)
    stack.start()  # nothing at start can tell a whole earlier copy from the real thing

    async def second_look() -> Companion:
        again = Companion(companion.wallet, tier1.bridge.url)
        await again.connect()
        again.watch.settle(await again.call("approvals.state"))
        await again.close()
        return again

    again = asyncio.run(second_look())
    assert again.watch.audit_alarms, "the companion did not see the signer's state go back"
    assert json.loads(witness.read_text()) == held
    verified = stack.owlia("audit", "verify", "--no-replay", "--against-companion", str(witness))
    assert verified.returncode == 1


def test_a_checkpoint_whose_state_went_back_is_refused_though_its_log_did_not(tmp_path):
    """The same log head at a lower epoch: commits that wrote no audit record (the saved clock, a
    device's last look) undone by an earlier copy. The witness refuses it and keeps what it holds."""
    identity = SignerIdentity(MasterKey(bytearray(b"m" * 32)))
    witness = Witness(tmp_path / "witness.json", identity.public_key)
    head = "ab" * 32
    assert witness.offer(make_checkpoint(identity, 7, head, epoch=12)).ok
    assert witness.offer(make_checkpoint(identity, 7, head, epoch=15)).ok  # moved on without a record
    verdict = witness.offer(make_checkpoint(identity, 7, head, epoch=13))
    assert not verdict.ok and "state went back" in verdict.problems[0]
    assert json.loads((tmp_path / "witness.json").read_text())["epoch"] == 15
    forged = {**make_checkpoint(identity, 8, "cd" * 32, {"seq": 7, "hash": head}, epoch=1), "epoch": 99}
    assert not witness.offer(forged).ok  # the epoch is signed: raising it by hand breaks the signature
    older_signer = make_checkpoint(identity, 8, "cd" * 32, {"seq": 7, "hash": head})  # no epoch at all
    assert not witness.offer(older_signer).ok  # reads as epoch 0: behind the 15 held
