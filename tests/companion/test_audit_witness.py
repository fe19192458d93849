"""The companion witnesses the signer's audit log through the real bridge and reports a rollback.

The signer signs a checkpoint of its committed audit head into every `approvals.state` reply; the
companion's Watch keeps the latest in its home. Root on the signer's host, holding the master key,
then cuts the log short and writes an anchor that verifies: `owlia audit verify` alone cannot tell,
but the companion's next look at the signer's state reports that the log went back.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from companion_bridge.companion.client import Companion
from companion_bridge.companion.watch import WITNESS_FILE
from signer.store.audit import ANCHOR_BYTES
from tests.companion.conftest import Tier1
from tests.conftest import audit_keys

pytestmark = [pytest.mark.chain]


def cut_tail_as_key_holder(tier1: Tier1, records: int) -> None:
    stack = tier1.stack
    keys = audit_keys(stack.paths)
    conn = sqlite3.connect(stack.paths.db, isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_delete")
    (last,) = conn.execute("SELECT max(seq) FROM audit").fetchone()
    conn.execute("DELETE FROM audit WHERE seq>?", (last - records,))
    seq, head = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    conn.close()
    anchor = {"seq": seq, "hash": head, "mac": keys.anchor_mac(seq, head)}
    stack.paths.anchor.write_bytes(json.dumps(anchor).encode().ljust(ANCHOR_BYTES))


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
