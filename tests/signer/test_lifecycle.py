"""The signer's life cycle through the CLI: init, config errors, tokens, session keys, secrecy."""

from __future__ import annotations

import json
import sqlite3
import stat
import time

import pytest

from signer.keystore import unlock
from signer.wire.exchange import SignerError, new_idempotency_key
from signer.wire.protocol import ErrorCode, Scope
from tests.conftest import FRIEND, PASSPHRASE, signer_db

pytestmark = pytest.mark.chain


def _sign(stack, token, value=10**15):
    return stack.call_sync(
        token,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(value)},
        },
    )


def test_cli_init_creates_a_private_home_and_refuses_a_second_init(tmp_path):
    import subprocess
    import sys

    home = tmp_path / "h"
    passfile = tmp_path / "pass"
    passfile.write_bytes(PASSPHRASE)
    passfile.chmod(0o600)
    cmd = [
        sys.executable,
        "-m",
        "bot.cli",
        "--home",
        str(home),
        "signer",
        "init",
        "--passphrase-file",
        str(passfile),
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    signer_home = home / "signer"
    assert stat.S_IMODE(signer_home.stat().st_mode) == 0o700
    for name in ("keystore.json", "signer.db", "policy.yaml", "admin.token"):
        assert stat.S_IMODE((signer_home / name).stat().st_mode) == 0o600, name
    assert PASSPHRASE not in (signer_home / "keystore.json").read_bytes()
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert second.returncode == 1 and "already exists" in second.stderr


def test_config_errors_name_the_field(tmp_path):
    import subprocess
    import sys

    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text(
        "chains:\n  - {id: 1, name: main, rpc_url: ftp://x}\nsigner: {max_connections: 0}\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "signer", "status"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert "chains[0].rpc_url" in out.stderr and "signer.max_connections" in out.stderr


def test_expired_token_is_refused(stack):
    from signer.admin import issue_client

    token = issue_client(stack.paths, "brief", Scope.READ, ttl_seconds=1, passphrase=bytearray(PASSPHRASE))[1]
    assert stack.call_sync(token, "status")["client"]["name"] == "brief"
    time.sleep(1.2)  # the token's 1 s lifetime runs out: the clock advancing is what is tested
    with pytest.raises(SignerError) as err:
        stack.call_sync(token, "status")
    assert err.value.code == ErrorCode.UNAUTHENTICATED


def test_revoked_and_rotated_session_keys_lose_signing_power(stack, anvil):
    key = stack.funded_session_key()
    token = stack.client_token("bot")
    assert _sign(stack, token)["status"] == "signed"
    admin = stack.admin_token
    rotated = stack.call_sync(
        admin, "session_key.rotate", {"idempotency_key": new_idempotency_key(), "key_id": key["key_id"]}
    )
    fresh = rotated["session_key"]
    assert fresh["address"] != key["address"] and rotated["retired"]["status"] == "retired"
    stack.call_sync(
        admin, "session_key.topup", {"idempotency_key": new_idempotency_key(), "key_id": fresh["key_id"]}
    )
    after_rotation = _sign(stack, token)
    assert after_rotation["status"] == "signed" and after_rotation["sender"] == fresh["address"]
    stack.call_sync(
        admin, "session_key.revoke", {"idempotency_key": new_idempotency_key(), "key_id": fresh["key_id"]}
    )
    refused = _sign(stack, token)
    assert refused["status"] != "signed" and refused["rule_id"] == "session_key.missing"
    # A restart does not resurrect a revoked key.
    stack.stop()
    stack.start()
    assert _sign(stack, token)["rule_id"] == "session_key.missing"


def test_expired_session_key_does_not_auto_sign(stack):
    admin = stack.admin_token
    stack.call_sync(
        admin,
        "session_key.create",
        {"idempotency_key": new_idempotency_key(), "chain_id": 31337, "ttl_seconds": 60},
    )
    stack.stop()
    conn = signer_db(stack.paths)  # as if the time had passed: the signer's own write, MAC and all
    conn.execute("UPDATE session_keys SET expires_at=?", (time.time() - 1,))
    conn.commit()
    conn.close()
    stack.start()
    result = _sign(stack, stack.client_token("bot"))
    assert result["status"] != "signed" and result["rule_id"] == "session_key.expired"


def test_session_key_secret_never_leaves_the_signer(stack, anvil):
    """Unseal the key the way only the signer can, then look for it everywhere anyone else can see."""
    key = stack.funded_session_key()
    token = stack.client_token("bot")
    replies = [json.dumps(_sign(stack, token)), json.dumps(_sign(stack, token, value=10**18))]
    admin = stack.admin_token
    for method in ("status", "addresses", "session_key.list"):
        replies.append(json.dumps(stack.call_sync(admin, method)))
    replies.append(json.dumps(stack.call_sync(admin, "audit.tail", {"n": 1000})))
    stack.stop()
    conn = sqlite3.connect(stack.paths.db)
    sealed = conn.execute("SELECT sealed FROM session_keys WHERE key_id=?", (key["key_id"],)).fetchone()[0]
    audit_text = "\n".join(row[0] for row in conn.execute("SELECT body FROM audit"))
    requests_text = "\n".join(str(row) for row in conn.execute("SELECT * FROM requests"))
    conn.close()
    with unlock(stack.paths.home, bytearray(PASSPHRASE)) as master:
        from signer.tier2.session_keys import _aad

        secret = bytes(master.open(sealed, aad=_aad(key["key_id"])))
    forms = {secret.hex(), secret.hex().upper(), "0x" + secret.hex()}
    haystacks = replies + [audit_text, requests_text, stack.log.read_text(errors="replace")]
    for hay in haystacks:
        for form in forms:
            assert form not in hay
    assert secret not in stack.paths.db.read_bytes()


def test_policy_check_cli_previews_without_signing(tmp_path):
    import subprocess
    import sys

    from tests.conftest import DEV_POLICY

    def check(intent: dict, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "--home",
                str(tmp_path),
                "policy",
                "check",
                "--policy",
                str(DEV_POLICY),
                "--intent",
                json.dumps(intent),
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )

    ok = check({"chain_id": 31337, "to": FRIEND, "value": str(10**16)})
    assert ok.returncode == 0 and json.loads(ok.stdout)["decision"]["outcome"] == "allow"
    full = check(
        {"chain_id": 31337, "to": FRIEND, "value": str(10**16)},
        "--spent",
        '{"31337:native:86400": "50000000000000000"}',
    )
    assert full.returncode == 3 and json.loads(full.stdout)["decision"]["rule_id"] == "limit.window.24h"
    unlimited = check(
        {
            "chain_id": 31337,
            "to": "0x5FbDB2315678afecb367f032d93F642f64180aa3",
            "value": "0",
            "data": "0x095ea7b3" + FRIEND[2:].lower().rjust(64, "0") + "f" * 64,
        }
    )
    assert unlimited.returncode == 4 and json.loads(unlimited.stdout)["decision"]["outcome"] == "deny"
    valid = subprocess.run(
        [sys.executable, "-m", "bot.cli", "policy", "validate", str(DEV_POLICY)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert valid.returncode == 0 and json.loads(valid.stdout)["valid"] is True
