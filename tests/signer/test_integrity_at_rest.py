"""Attack: with the signer stopped, edit the state that grants authority; the next start must refuse.

A real daemon process builds a home with one row of every authority-bearing kind (clients, one
revoked; a session key; a loosening proposal waiting for the companion; a paired device; a
pairing; a used proof; the kill switch on). Each case restores that home, edits it the way
someone with the signer's files but not its passphrase can (a plain sqlite3 connection, which must
first drop the MAC triggers: it cannot compute the MACs), and starts the daemon: it must exit
without serving, record why in the audit log, and say so in `owlia signer status`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from signer.auth import _hash
from signer.store.integrity import PROTECTED
from signer.wire.protocol import Scope
from tests.conftest import DEV_POLICY, SignerStack, new_idempotency_key, signer_db

pytestmark = pytest.mark.chain

LOOSE = DEV_POLICY.read_text().replace('per_tx: "0.01"', 'per_tx: "0.02"')
ATTACKER_KEY = "aa" * 32


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, anvil):
    """The stack, stopped, and a copy of its home as the signer left it."""
    root = tmp_path_factory.mktemp("integrity")
    stack = SignerStack(root, anvil.url).start()
    try:
        admin = stack.admin_token
        stack.client_token("bot")
        stack.client_token("old", Scope.SIGN)
        assert stack.owlia("signer", "client", "revoke", "old").returncode == 0
        stack.call_sync(
            admin, "session_key.create", {"idempotency_key": new_idempotency_key(), "chain_id": 31337}
        )
        stack.paths.policy.write_text(LOOSE)
        assert stack.call_sync(admin, "policy.reload")["status"] == "proposed"
    finally:
        stack.stop()
    conn = signer_db(
        stack.paths
    )  # what pairing, a used proof and a freeze leave behind, written as the signer writes
    now = time.time()
    conn.execute(
        "INSERT INTO devices VALUES('dev_1', 'phone', ?, ?, ?, ?, ?, ?)",
        ("bb" * 32, "0x" + "11" * 20, json.dumps(["approve", "deny", "freeze", "unfreeze"]), now, now, now),
    )
    conn.execute(
        "INSERT INTO pairings VALUES('pair_1', ?, 'phone', ?, ?, ?, 'dev_1')",
        ("cc" * 32, now, now + 600, now),
    )
    conn.execute("INSERT INTO used_proofs VALUES(?, ?)", ("dd" * 32, now))
    conn.execute("INSERT INTO meta(key, value) VALUES('frozen', '1'), ('freeze_id', 'frz_1')")
    conn.execute(
        "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at, status)"
        " VALUES('req_spent', 'c', 'k1', 'sign', 'h', ?, 'mined')",
        (now,),
    )
    conn.execute(
        "INSERT INTO spends(request_id, chain_id, asset, amount, ts, state)"
        " VALUES('req_spent', 31337, 'native', '40000000000000000', ?, 'committed')",
        (now,),
    )
    conn.execute("INSERT INTO recipients VALUES(31337, ?, ?, 'req_spent')", ("0x" + "44" * 20, now))
    conn.close()
    copy = root / "pristine"
    shutil.copytree(stack.paths.home, copy)
    yield stack, copy
    stack.close()


def restore(stack: SignerStack, copy: Path) -> None:
    shutil.rmtree(stack.paths.home)
    shutil.copytree(copy, stack.paths.home)


def offline(stack: SignerStack) -> sqlite3.Connection:
    """The attacker's connection: no MAC functions, so the triggers that would need them go first."""
    conn = sqlite3.connect(stack.paths.db, isolation_level=None)
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='trigger' AND name LIKE '%_mac_%'"
    ).fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    return conn


def start_refused(stack: SignerStack) -> str:
    argv, env = stack.serve_command()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, "the signer started over tampered state"
    assert not stack.socket.exists()
    assert "did not start" in done.stderr, done.stderr[-2000:]
    return done.stderr


def refusal_record(stack: SignerStack) -> dict:
    conn = sqlite3.connect(f"file:{stack.paths.db}?mode=ro", uri=True)
    try:
        (body,) = conn.execute(
            "SELECT body FROM audit WHERE kind='integrity.refused' ORDER BY seq DESC"
        ).fetchone()
    finally:
        conn.close()
    return json.loads(body)


CASES: dict[str, tuple[list[str], str]] = {
    # the attack: the pending loosening copied into the policy in force
    "policy in force from the proposal": (
        [
            "UPDATE meta SET value=(SELECT text FROM policy_proposals) WHERE key='policy_text'",
            "UPDATE meta SET value=(SELECT policy_hash FROM policy_proposals) WHERE key='policy_hash'",
        ],
        "meta[policy_text]: edited",
    ),
    "policy in force deleted with its MAC": (
        [
            "DELETE FROM meta WHERE key='policy_text'",
            "DELETE FROM row_macs WHERE tbl='meta' AND pk='policy_text'",
        ],
        "meta: deleted",
    ),
    "kill switch lifted": (["UPDATE meta SET value='0' WHERE key='frozen'"], "meta[frozen]: edited"),
    "kill switch row deleted": (["DELETE FROM meta WHERE key='frozen'"], "meta[frozen]: deleted"),
    "saved clock moved": (["UPDATE meta SET value=value || ' ' WHERE key='clock'"], "meta[clock]: edited"),
    "main account set": (
        ["INSERT INTO meta VALUES('main_account', '0x" + "22" * 20 + "')"],
        "meta[main_account]: added",
    ),
    "revoked client revived": (["UPDATE clients SET revoked_at=NULL WHERE name='old'"], "clients["),
    "client scope raised": (["UPDATE clients SET scope='admin' WHERE name='bot'"], "clients["),
    "client forged": (
        [f"INSERT INTO clients VALUES('0123456789ab', 'evil', 'admin', '{_hash('x' * 43)}', 0, NULL, NULL)"],
        "clients[0123456789ab]: added",
    ),
    "client row copied under another id, MAC and all": (
        [
            "INSERT INTO clients SELECT 'abcdefabcdef', 'twin', scope, token_hash, created_at, expires_at, revoked_at"
            " FROM clients WHERE name='bot'",
            "INSERT INTO row_macs SELECT tbl, 'abcdefabcdef', mac FROM row_macs WHERE tbl='clients' AND pk="
            "(SELECT client_id FROM clients WHERE name='bot')",
        ],
        "clients[abcdefabcdef]: edited",
    ),
    "session key extended": (["UPDATE session_keys SET expires_at=expires_at+315360000"], "session_keys["),
    "session key cap raised": (
        ["UPDATE session_keys SET balance_cap='1000000000000000000000'"],
        "session_keys[",
    ),
    "revoked device revived": (["UPDATE devices SET revoked_at=NULL"], "devices[dev_1]: edited"),
    "device forged": (
        [
            f"INSERT INTO devices VALUES('dev_evil', 'evil', '{ATTACKER_KEY}', '0x{'11' * 20}',"
            ' \'["approve","unfreeze"]\', 0, NULL, NULL)'
        ],
        "devices[dev_evil]: added",
    ),
    "pairing reopened": (["UPDATE pairings SET used_at=NULL, device_id=NULL"], "pairings[pair_1]: edited"),
    "used proof forgotten with its MAC": (
        [
            "DELETE FROM used_proofs",
            "DELETE FROM row_macs WHERE tbl='used_proofs'",
        ],
        "used_proofs: deleted",
    ),
    "pending approval approved offline": (["UPDATE approvals SET state='approved'"], "approvals["),
    "proposal text swapped": (["UPDATE policy_proposals SET text=text || ' '"], "policy_proposals["),
    "spend deleted to make room under the window": (["DELETE FROM spends"], "spends: changed"),
    "spend released offline": (["UPDATE spends SET state='released'"], "spends: changed"),
    "spend amount lowered": (["UPDATE spends SET amount='1'"], "spends: changed"),
    "request deleted to make room under the rate limit": (["DELETE FROM requests"], "requests: changed"),
    "attacker address added to the known recipients": (
        [f"INSERT INTO recipients VALUES(31337, '0x{'66' * 20}', 0, 'req_spent')"],
        "recipients[31337:0x6666",
    ),
    "MACs dropped to pass for a home from before row MACs": (
        [
            "DELETE FROM row_macs",
            "DELETE FROM table_digests",
        ],
        "unsealed",
    ),
}


def test_the_untouched_home_starts(pristine):
    stack, copy = pristine
    restore(stack, copy)
    stack.start()
    try:
        assert stack.call_sync(stack.admin_token, "status")["frozen"] is True
    finally:
        stack.stop()


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_offline_edit_is_refused_at_start_and_reported(pristine, case):
    stack, copy = pristine
    restore(stack, copy)
    statements, expected = CASES[case]
    conn = offline(stack)
    for sql in statements:
        assert conn.execute(sql).rowcount != 0 or sql.startswith("DELETE FROM row_macs"), sql
    conn.close()
    stderr = start_refused(stack)
    assert expected in stderr
    record = refusal_record(stack)
    assert any(expected in f for f in record["findings"]), record
    status = stack.owlia("signer", "status")
    assert status.returncode == 1 and json.loads(status.stdout)["integrity"] == "refused"
    security = stack.owlia("security", "audit")
    assert "integrity" in security.stdout and "refused" in security.stdout, security.stdout


def test_an_offline_writer_cannot_even_write_without_dropping_the_triggers(pristine):
    stack, copy = pristine
    restore(stack, copy)
    conn = sqlite3.connect(stack.paths.db)
    for table in PROTECTED:
        with pytest.raises(sqlite3.OperationalError, match="no such function"):
            conn.execute(f"DELETE FROM {table}")
    conn.close()


def test_seal_removes_what_fails_and_the_revived_client_stays_dead(pristine):
    stack, copy = pristine
    restore(stack, copy)
    conn = offline(stack)
    conn.execute("UPDATE clients SET revoked_at=NULL WHERE name='old'")
    conn.close()
    start_refused(stack)
    check = stack.owlia("signer", "integrity", "check")
    assert check.returncode == 1 and json.loads(check.stdout)["findings"][0]["table"] == "clients"
    sealed = stack.owlia("signer", "integrity", "seal")
    assert sealed.returncode == 0, sealed.stderr
    assert any(r.startswith("clients[") for r in json.loads(sealed.stdout)["removed"])
    stack.start()
    try:
        names = {c["name"] for c in json.loads(stack.owlia("signer", "client", "list").stdout)}
        assert "old" not in names and "bot" in names
    finally:
        stack.stop()


def test_seal_will_not_pick_a_policy_on_its_own(pristine):
    stack, copy = pristine
    restore(stack, copy)
    conn = offline(stack)
    conn.execute("UPDATE meta SET value=(SELECT text FROM policy_proposals) WHERE key='policy_text'")
    conn.close()
    refused = stack.owlia("signer", "integrity", "seal")
    assert refused.returncode == 1 and "--accept-policy-file" in refused.stderr
    start_refused(stack)  # nothing was changed by the refused seal
    stack.paths.policy.write_text(DEV_POLICY.read_text())  # the operator puts back the policy they want
    accepted = stack.owlia("signer", "integrity", "seal", "--accept-policy-file")
    assert accepted.returncode == 0, accepted.stderr
    stack.start()
    try:
        status = stack.call_sync(stack.admin_token, "status")
        assert status["frozen"] is True  # the kill switch was on; a seal never lifts it
    finally:
        stack.stop()


def as_previous_release_left_it(stack: SignerStack) -> int:
    """Strip what this release adds: no row MACs or digests, an unkeyed SHA-256 audit chain without the
    `audit.keyed` seal, an anchor without a MAC. Returns the number of audit records."""
    import hashlib

    conn = offline(stack)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("DROP TRIGGER audit_no_delete")
    conn.execute("DROP TABLE row_macs")
    conn.execute("DROP TABLE table_digests")
    conn.execute("DROP TABLE state_head")
    rows = conn.execute("SELECT ts, kind, body FROM audit WHERE kind!='audit.keyed' ORDER BY seq").fetchall()
    conn.execute("DELETE FROM audit")
    prev = "0" * 64
    for seq, (ts, kind, body) in enumerate(rows, start=1):
        digest = hashlib.sha256(f"{seq}\n{ts!r}\n{kind}\n{body}\n{prev}".encode()).hexdigest()
        conn.execute("INSERT INTO audit VALUES(?,?,?,?,?,?)", (seq, ts, kind, body, prev, digest))
        prev = digest
    conn.close()
    stack.paths.anchor.write_text(json.dumps({"seq": len(rows), "hash": prev}).ljust(127) + "\n")
    return len(rows)


def test_a_home_from_the_previous_release_is_sealed_once_by_the_operator(pristine):
    stack, copy = pristine
    restore(stack, copy)
    legacy = as_previous_release_left_it(stack)
    stderr = start_refused(stack)  # nothing is sealed behind the operator's back
    assert "unsealed" in stderr
    verified = stack.owlia("audit", "verify", "--no-replay")
    assert verified.returncode == 1 and "owlia signer integrity seal" in verified.stdout
    sealed = stack.owlia("signer", "integrity", "seal")
    assert sealed.returncode == 0, sealed.stderr
    report = json.loads(sealed.stdout)
    assert report["removed"] == [] and report["sealed_rows"] > 10 and report["legacy_audit_records"] >= legacy
    assert stack.owlia("audit", "verify", "--no-replay").returncode == 0
    stack.start()
    try:
        assert stack.call_sync(stack.admin_token, "status")["frozen"] is True
    finally:
        stack.stop()
    assert stack.owlia("audit", "verify").returncode == 0
    # a legacy prefix longer than the seal names is a rewrite
    conn = offline(stack)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET body='{}' WHERE seq=1")
    conn.close()
    assert stack.owlia("audit", "verify", "--no-replay").returncode == 1
