"""Attack: rewrite the signer's audit log on disk, with and without the master key.

Without the key (the two rewrites that used to verify): cut the tail and rewrite the anchor;
delete a signed-and-mined request's records, renumber, re-hash, rewrite the anchor. The keyed chain
and the anchor's MAC catch both. With the key (root on the signer's host, who can read the
passphrase file): the same rewrites, re-keyed, pass the local check, and only the companion's
witness, which holds the latest checkpoint the signer signed, can tell: `owlia audit verify
--against-companion` and the witness itself both report the log went back.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from signer.keystore import unlock
from signer.store.audit import ANCHOR_BYTES, AuditKeys
from signer.tier1.identity import SignerIdentity
from signer.wire.exchange import new_idempotency_key
from signer.wire.protocol import Scope
from signer.wire.witness import Witness
from tests.conftest import FRIEND, PASSPHRASE, SignerStack, audit_keys, signer_db, wait_receipt

pytestmark = pytest.mark.chain


def signer_key(stack: SignerStack) -> str:
    with unlock(stack.paths.home, bytearray(PASSPHRASE)) as master:
        return SignerIdentity(master).public_key


def checkpoint(stack: SignerStack, token: str, witness: Witness | None = None) -> dict:
    """The signer's checkpoint, bound (as the companion asks) to the record the witness holds."""
    held = witness.held_seq() if witness is not None else None
    params = {"witness_seq": held} if held is not None else None
    return stack.call_sync(token, "approvals.state", params)["audit_checkpoint"]


@pytest.fixture()
def witnessed(make_stack, anvil, tmp_path):
    """A signer that signed and broadcast a transfer, and a witness holding its checkpoint; stopped."""
    stack = make_stack().start()
    stack.funded_session_key()
    signed = stack.call_sync(
        stack.client_token("bot"),
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(10**15)},
        },
    )
    assert signed["status"] in ("signed", "broadcast"), signed
    wait_receipt(anvil, signed["tx_hash"])
    bridge = stack.client_token("bridge", Scope.BRIDGE)
    witness = Witness(tmp_path / "witness.json", signer_key(stack))
    assert witness.offer(checkpoint(stack, bridge)).ok
    stack.stop()
    assert stack.owlia("audit", "verify").returncode == 0
    return stack, witness, bridge, signed["request_id"]


def _rows(stack: SignerStack) -> tuple[sqlite3.Connection, list[tuple]]:
    conn = sqlite3.connect(stack.paths.db, isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS audit_no_update")
    conn.execute("DROP TRIGGER IF EXISTS audit_no_delete")
    return conn, conn.execute(
        "SELECT seq, ts, kind, body, prev_hash, hash FROM audit ORDER BY seq"
    ).fetchall()


def _material(seq, ts, kind, body, prev) -> bytes:
    return f"{seq}\n{ts!r}\n{kind}\n{body}\n{prev}".encode()


def rechain(stack: SignerStack, keep: list[tuple], keys: AuditKeys | None) -> None:
    """Write `keep` back as seq 1..n, each hash recomputed (HMAC with `keys`, else the old SHA-256), and
    an anchor on the new head (its MAC recomputed with `keys`, else the old one left in place); with
    `keys`, the state head bound to the new head too."""
    conn, _ = _rows(stack)
    conn.execute("DELETE FROM audit")
    prev = "0" * 64
    for seq, (_, ts, kind, body, _, _) in enumerate(keep, start=1):
        if keys is not None:
            digest = keys.record_hash(seq, ts, kind, body, prev)
        else:
            digest = hashlib.sha256(_material(seq, ts, kind, body, prev)).hexdigest()
        conn.execute("INSERT INTO audit VALUES(?,?,?,?,?,?)", (seq, ts, kind, body, prev, digest))
        prev = digest
    conn.close()
    write_anchor(stack, len(keep), prev, keys)
    if keys is not None:  # the key holder binds the state to the rewritten log, as their own signer would
        signer_db(stack.paths).close()


def write_anchor(stack: SignerStack, seq: int, head: str, keys: AuditKeys | None) -> None:
    old = json.loads(stack.paths.anchor.read_text())
    mac = keys.anchor_mac(seq, head) if keys is not None else old["mac"]
    stack.paths.anchor.write_bytes(
        json.dumps({"seq": seq, "hash": head, "mac": mac}).encode().ljust(ANCHOR_BYTES)
    )


def verify(stack: SignerStack, *extra: str) -> tuple[int, dict]:
    done = stack.owlia("audit", "verify", *extra)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip().startswith("{") else {
        "stderr": done.stderr
    }


def test_cutting_the_tail_and_rewriting_the_anchor_fails_verify_and_the_witness(witnessed):
    stack, witness, _, _ = witnessed
    conn, rows = _rows(stack)
    conn.execute("DELETE FROM audit WHERE seq>?", (len(rows) - 5,))
    conn.close()
    seq, _, _, _, _, head = rows[-6]
    write_anchor(stack, seq, head, None)
    code, report = verify(stack)
    assert code == 1 and any("anchor" in p and "not authentic" in p for p in report["problems"]), report
    code, report = verify(stack, "--against-companion", str(witness.path))
    assert code == 1 and any("truncated" in p for p in report["problems"]), report


def test_dropping_a_mined_requests_records_and_rehashing_fails_verify(witnessed):
    stack, witness, _, request_id = witnessed
    _, rows = _rows(stack)
    keep = [r for r in rows if request_id not in r[3]]
    assert len(keep) < len(rows)
    rechain(stack, keep, None)
    code, report = verify(stack)
    assert code == 1 and report["problems"], report
    code, report = verify(stack, "--against-companion", str(witness.path))
    assert code == 1, report


def test_a_key_holder_rewrite_passes_locally_but_the_companion_catches_it(witnessed):
    stack, witness, bridge, request_id = witnessed
    keys = audit_keys(stack.paths)
    _, rows = _rows(stack)
    rechain(stack, [r for r in rows if request_id not in r[3]], keys)
    code, report = verify(stack, "--no-replay")
    assert code == 0, report  # the master key can forge a consistent log: this alone cannot tell
    code, report = verify(stack, "--no-replay", "--against-companion", str(witness.path))
    assert code == 1 and report["companion_checkpoint"]["ok"] is False, report
    held = witness.latest()
    stack.start()  # the signer itself now signs checkpoints of the shorter log
    try:
        verdict = witness.offer(checkpoint(stack, bridge, witness))
    finally:
        stack.stop()
    # which refusal names it depends on how many start-up records the restart wrote: fewer than the
    # companion saw (went back), as many (changed), or more (does not show the record it saw)
    refusals = ("went back", "changed", "does not show record")
    assert not verdict.ok and any(word in verdict.problems[0] for word in refusals), verdict
    assert witness.latest() == held  # it refuses to go back: the checkpoint it held stays


def test_a_key_holder_rewrite_of_the_same_length_is_caught(witnessed):
    stack, witness, _, _ = witnessed
    keys = audit_keys(stack.paths)
    _, rows = _rows(stack)
    forged = [r if i != 2 else (r[0], r[1] + 1.0, *r[2:]) for i, r in enumerate(rows)]  # record 3 re-dated
    rechain(stack, forged, keys)
    assert verify(stack, "--no-replay")[0] == 0
    code, report = verify(stack, "--no-replay", "--against-companion", str(witness.path))
    assert code == 1 and "rewritten" in report["problems"][-1], report
    held = witness.latest()
    same_seq = {"seq": held["seq"], "head": "11" * 32, "signer_sig": held["signer_sig"]}
    assert not witness.offer(same_seq).ok  # not signed by the signer over this head


def test_a_checkpoint_the_signer_did_not_sign_is_refused(witnessed, tmp_path):
    stack, witness, _, _ = witnessed
    held = witness.latest()
    assert not witness.offer({**held, "seq": held["seq"] + 100}).ok
    assert not Witness(tmp_path / "other.json", "00" * 32).offer(held).ok
    assert witness.latest() == held


def test_verify_needs_the_passphrase(witnessed):
    stack, _, _, _ = witnessed
    env = {k: v for k, v in __import__("os").environ.items() if k != "OWLIA_SIGNER_PASSPHRASE"}
    done = stack.owlia("audit", "verify", env=env)
    assert done.returncode == 1 and "passphrase" in done.stderr
    wrong = Path(stack.root) / "wrong"
    wrong.write_text("not the passphrase\n")
    wrong.chmod(0o600)
    done = stack.owlia("audit", "verify", "--passphrase-file", str(wrong), env=env)
    assert done.returncode == 1 and "wrong passphrase" in done.stderr


def test_verify_asks_the_running_daemon_when_no_passphrase_is_given(witnessed):
    stack, _, _, _ = witnessed
    env = {k: v for k, v in __import__("os").environ.items() if k != "OWLIA_SIGNER_PASSPHRASE"}
    stack.start()
    try:
        done = stack.owlia("audit", "verify", env=env)
        assert done.returncode == 0 and json.loads(done.stdout)["ok"] is True, done.stderr
        conn, rows = _rows(stack)  # edited under the running daemon's feet
        conn.execute("UPDATE audit SET body=? WHERE seq=2", (rows[1][3].replace("}", ',"x":1}', 1),))
        conn.close()
        done = stack.owlia("audit", "verify", env=env)
        assert done.returncode == 1 and any("record 2" in p for p in json.loads(done.stdout)["problems"])
    finally:
        stack.stop()


def test_a_log_truncated_then_grown_back_past_the_witness_is_caught(witnessed):
    """Cutting a request out and letting the signer append until the log is longer than the record the
    companion saw: a count alone would pass; the hash the log holds at that record does not."""
    stack, witness, bridge, request_id = witnessed
    keys = audit_keys(stack.paths)
    _, rows = _rows(stack)
    kept = [r for r in rows if request_id not in r[3]]
    held = witness.latest()
    rechain(stack, kept, keys)
    stack.start()
    try:
        for _ in range(len(rows) - len(kept) + 3):  # each restart's own records grow the log back
            stack.stop()
            stack.start()
        grown = checkpoint(stack, bridge, witness)
    finally:
        stack.stop()
    assert grown["seq"] > held["seq"], (grown, held)
    verdict = witness.offer(grown)
    assert not verdict.ok and "grown back" in verdict.problems[0], verdict
    assert witness.latest() == held


def test_a_log_that_grows_honestly_advances_the_witness(witnessed):
    stack, witness, bridge, _ = witnessed
    held = witness.latest()
    stack.start()
    try:
        stack.call_sync(stack.admin_token, "session_key.list")
        grown = checkpoint(stack, bridge, witness)
    finally:
        stack.stop()
    assert grown["seq"] > held["seq"] and grown["at"] == {"seq": held["seq"], "hash": held["head"]}
    assert witness.offer(grown).ok and witness.latest()["seq"] == grown["seq"]
