"""Attack: with the signer stopped, put chosen tables back from an earlier copy of signer.db.

Each table comes back with its rows, their row MACs and its digest, so every row and every table is
consistent with itself, as an attacker with the signer user's files (and no passphrase) can make
it. Before the state head this went unseen: a revoked client's token worked again, a host freeze
and the session keys it revoked came back, and a full spending window had room again. Now the
start refuses in words, `owlia signer integrity check` names the tables, a seal will not keep such
a state unless told to, and keeping it freezes the signer and revokes again what the log records as
revoked. The whole home put back, anchor and all, is the one rollback the start cannot see; the
companion's witness sees it (tests/companion/test_audit_witness.py).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError, new_idempotency_key
from tests.conftest import FRIEND, SignerStack, wait_receipt
from tests.signer.rollback import put_back

pytestmark = pytest.mark.chain
CENT = 10**16  # the dev policy: 0.01 ETH a transaction, 0.05 ETH a day
DB_FILES = ("signer.db", "signer.db-wal", "signer.db-shm")


def copy_of(stack: SignerStack, into: Path) -> Path:
    """The home as it is now (the signer stopped): what a thief or a backup keeps."""
    shutil.copytree(stack.paths.home, into)
    return into


def put_back_tables(stack: SignerStack, old: Path, *tables: str) -> None:
    """The attacker's edit: each table's rows, row MACs and digest as the old copy has them."""
    put_back(stack.paths.db, old / stack.paths.db.relative_to(stack.paths.home), tables)


def refused_start(stack: SignerStack) -> str:
    argv, env = stack.serve_command()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, "the signer started over a state that went back"
    assert not stack.socket.exists()
    assert "went back to an earlier state" in done.stderr and "did not start" in done.stderr, done.stderr[
        -2000:
    ]
    assert "Traceback" not in done.stderr
    return done.stderr


def rolled_back(stack: SignerStack) -> set[str]:
    check = stack.owlia("signer", "integrity", "check")
    assert check.returncode == 1, check.stdout
    report = json.loads(check.stdout)
    assert "went back" in report["what_happened"]
    return {f["table"] for f in report["findings"] if f["problem"] == "rolled_back"}


def test_a_revoked_client_put_back_is_refused_and_stays_revoked(make_stack):
    stack = make_stack()
    token = stack.client_token("bot")
    old = copy_of(stack, stack.root / "old")
    assert stack.owlia("signer", "client", "revoke", "bot").returncode == 0
    put_back_tables(stack, old, "clients")
    conn = sqlite3.connect(stack.paths.db)
    assert conn.execute("SELECT revoked_at FROM clients WHERE name='bot'").fetchone() == (
        None,
    )  # the attack as seen
    conn.close()

    stderr = refused_start(stack)
    assert "clients: rolled_back" in stderr
    assert rolled_back(stack) == {"clients"}
    status = stack.owlia("signer", "status")
    assert json.loads(status.stdout)["integrity"] == "refused"

    refused = stack.owlia("signer", "integrity", "seal")
    assert (
        refused.returncode == 1
        and "--accept-rollback" in refused.stderr
        and "nothing was changed" in refused.stderr
    )
    refused_start(stack)  # the refused seal changed nothing

    kept = stack.owlia("signer", "integrity", "seal", "--accept-rollback")
    assert kept.returncode == 0, kept.stderr
    accepted = json.loads(kept.stdout)["rollback_accepted"]
    assert accepted["frozen"] is True and accepted["clients_revoked_again"] == ["bot"]
    stack.start()
    try:
        assert stack.call_sync(stack.admin_token, "status")["frozen"] is True
        with pytest.raises(SignerError) as refused_token:
            stack.call_sync(token, "status")
        assert refused_token.value.code == -32001
    finally:
        stack.stop()


def test_a_freeze_lifted_and_its_revoked_session_keys_put_back_are_refused(make_stack):
    stack = make_stack().start()
    key = stack.funded_session_key()
    stack.stop()
    old = copy_of(stack, stack.root / "old")
    stack.start()
    assert stack.owlia("signer", "freeze").returncode == 0  # the host's kill switch
    stack.stop()
    put_back_tables(stack, old, "meta", "session_keys")
    conn = sqlite3.connect(stack.paths.db)
    assert conn.execute("SELECT value FROM meta WHERE key='frozen'").fetchone() in (None, ("0",))
    assert conn.execute("SELECT status FROM session_keys WHERE key_id=?", (key["key_id"],)).fetchone() == (
        "active",
    )
    conn.close()

    refused_start(stack)
    assert rolled_back(stack) >= {"meta", "session_keys"}


def test_a_full_spending_window_put_back_to_empty_is_refused(make_stack, anvil):
    """The issue's ledger attack: after a full 24 h window, the spends and requests from before it."""
    stack = make_stack().start()
    stack.funded_session_key()
    stack.stop()
    old = copy_of(stack, stack.root / "old")
    stack.start()
    token = stack.client_token("bot")

    async def fill_the_window() -> list[str]:
        async with SignerClient(stack.socket, token) as client:
            hashes = []
            for _ in range(5):
                reply = await client.sign(
                    {"chain_id": 31337, "to": FRIEND, "value": str(CENT)},
                    idempotency_key=new_idempotency_key("t"),
                )
                assert reply.status == "signed", reply
                hashes.append(reply.tx_hash)
            return hashes

    for tx_hash in asyncio.run(fill_the_window()):
        wait_receipt(anvil, tx_hash)
    stack.stop()
    put_back_tables(stack, old, "spends", "requests")

    refused_start(stack)
    assert rolled_back(stack) == {"spends", "requests"}


def test_the_whole_database_put_back_under_a_newer_anchor_is_refused(make_stack):
    stack = make_stack().start()
    stack.stop()
    old = copy_of(stack, stack.root / "old")
    stack.client_token("bot")  # one more commit, and an anchor that holds it
    for name in DB_FILES:
        (stack.paths.home / name).unlink(missing_ok=True)
        if (old / name).exists():
            shutil.copy(old / name, stack.paths.home / name)

    stderr = refused_start(stack)
    assert "audit: rolled_back" in stderr


def test_a_state_record_edited_or_taken_away_is_refused(make_stack):
    stack = make_stack().start()
    stack.stop()
    conn = sqlite3.connect(stack.paths.db, isolation_level=None)
    conn.execute("UPDATE state_head SET epoch=epoch+1000")  # cannot be re-MACed without the key
    conn.close()
    assert "state: edited" in refused_start(stack)
    conn = sqlite3.connect(stack.paths.db, isolation_level=None)
    conn.execute("DELETE FROM state_head")  # nor passed off as a home from before the state head
    conn.close()
    assert "state: deleted" in refused_start(stack)


def test_a_state_kept_moving_forward_starts_every_time(make_stack):
    """The converse: stops, restarts, kill -9, CLI writes beside the daemon never trip the check."""
    stack = make_stack().start()
    stack.funded_session_key()
    stack.client_token("beside-the-daemon")  # another process commits while the daemon runs
    stack.kill9()
    stack.start()
    stack.stop()
    stack.start()
    try:
        assert stack.call_sync(stack.admin_token, "status")["frozen"] is False
    finally:
        stack.stop()
    check = stack.owlia("signer", "integrity", "check")
    assert check.returncode == 0 and json.loads(check.stdout)["ok"] is True
