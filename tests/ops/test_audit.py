"""Every audit check: a bad setup it flags, a good one it passes; --fix only tightens."""

from __future__ import annotations

import json
import os
import socket
import stat
from importlib import resources
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from bot.cli import security_cmd
from bot.ops.audit import security_audit, weak_token_reason
from bot.ops.checks import Report
from bot.ops.fix import fix_all
from policies.kernel.files import write_private_file
from signer.daemon import init_home
from signer.wire.settings import SignerPaths, load_signer_config
from tests.ops.conftest import context, requires_root, run_init, set_config

PASSPHRASE = b"ops test passphrase"
STRONG = "Zq8vN1xR4tKp0wLm7YbC3dFg6HjS2aQe9UoIiT5rVnE"  # 43 urlsafe chars, 256-bit shaped


def findings(report: Report, check_id: str | None = None) -> list:
    return [f for f in report.findings() if check_id is None or f.id == check_id]


def status(report: Report, check_id: str) -> str:
    return next(c.status for c in report.checks if c.id == check_id)


def audit(home: Path, **kwargs) -> Report:
    return security_audit(context(home, **kwargs))


def signer_home(home: Path, policy_text: str | None = None) -> SignerPaths:
    paths = SignerPaths.from_config(home, load_signer_config(home))
    policy = None
    if policy_text is not None:
        policy = home.parent / "policy.yaml"
        policy.write_text(policy_text)
    init_home(paths, bytearray(PASSPHRASE), policy_file=policy, scrypt_n=2**10)
    return paths


def default_policy() -> dict:
    return yaml.safe_load(resources.files("policies").joinpath("defaults/default.yaml").read_text())


def test_fresh_init_is_clean(home):
    report = audit(home)
    assert report.ok and findings(report) == [], findings(report)
    for check_id in ("OWL-PERM-001", "OWL-PERM-002", "OWL-GW-001", "OWL-ALLOW-001", "OWL-SEC-001"):
        assert status(report, check_id) == "pass"


def test_broken_config_is_critical_and_other_checks_skip(home):
    (home / "config.yaml").write_text("bot:\n  gateway: {port: 99999999}\n")
    report = audit(home)
    assert [f.severity for f in findings(report, "OWL-CONF-001")] == ["critical"]
    assert status(report, "OWL-GW-001") == "skip" and not report.ok


@pytest.mark.parametrize(
    "relative, mode, check_id, severity",
    [
        (".", 0o755, "OWL-PERM-001", "warning"),
        ("config.yaml", 0o644, "OWL-PERM-001", "warning"),
        ("secrets", 0o750, "OWL-PERM-002", "critical"),
        ("secrets/signer.token", 0o640, "OWL-PERM-002", "critical"),
        ("auth.json", 0o604, "OWL-OAUTH-001", "critical"),
    ],
)
def test_loose_modes_are_flagged_then_fixed(home, relative, mode, check_id, severity):
    path = home / relative
    if not path.exists():
        write_private_file(path, b"owl_0123456789ab_" + b"x" * 43)
    path.chmod(mode)
    report = audit(home)
    [finding] = findings(report, check_id)
    assert (
        finding.severity == severity
        and finding.fixable
        and str(path.resolve()).rstrip("/.") in finding.message
    )
    fixed = fix_all(context(home))
    assert len(fixed) == 1
    assert stat.S_IMODE(path.stat().st_mode) == mode & (0o700 if path.is_dir() else 0o600)
    assert findings(audit(home), check_id) == []


def test_fix_never_follows_a_symlink(home, tmp_path):
    outside = tmp_path / "victim.txt"
    outside.write_text("not ours")
    outside.chmod(0o644)
    (home / "secrets" / "gateway.token").symlink_to(outside)
    [finding] = findings(audit(home), "OWL-PERM-002")
    assert "symlink" in finding.message and not finding.fixable
    assert fix_all(context(home)) == []
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644


def test_signer_files_must_be_private(home):
    paths = signer_home(home)
    assert findings(audit(home), "OWL-PERM-003") == []
    (paths.home / "keystore.json").chmod(0o644)
    paths.home.chmod(0o750)
    flagged = findings(audit(home), "OWL-PERM-003")
    assert {f.severity for f in flagged} == {"critical"} and len(flagged) == 2
    fix_all(context(home))
    assert stat.S_IMODE((paths.home / "keystore.json").stat().st_mode) == 0o600
    assert findings(audit(home), "OWL-PERM-003") == []


def _listen(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    return sock


def test_signer_socket_modes_and_directory(home, open_root):
    sockdir = open_root / "run"
    sockdir.mkdir(mode=0o750)
    set_config(home, signer={"socket": str(sockdir / "s.sock")})
    listener = _listen(sockdir / "s.sock")
    try:
        os.chmod(sockdir / "s.sock", 0o660)
        assert status(audit(home), "OWL-SOCK-001") == "pass"
        os.chmod(sockdir / "s.sock", 0o666)
        [finding] = findings(audit(home), "OWL-SOCK-001")
        assert finding.severity == "critical" and finding.fixable
        fix_all(context(home))
        assert stat.S_IMODE(os.lstat(sockdir / "s.sock").st_mode) == 0o660
        sockdir.chmod(0o777)
        [finding] = findings(audit(home), "OWL-SOCK-001")
        assert "world-writable" in finding.message
    finally:
        listener.close()


def test_socket_in_the_wrong_group_is_flagged(home, open_root):
    set_config(home, signer={"socket": str(open_root / "s.sock"), "socket_group": "nogroup"})
    listener = _listen(open_root / "s.sock")
    try:
        os.chmod(open_root / "s.sock", 0o660)
        [finding] = findings(audit(home), "OWL-SOCK-001")
        assert "nogroup" in finding.message
        os.chown(open_root / "s.sock", -1, 65534)
        assert status(audit(home), "OWL-SOCK-001") == "pass"
    finally:
        listener.close()


def test_one_user_for_bot_and_signer_is_a_warning(home):
    signer_home(home)
    [finding] = findings(audit(home), "OWL-ISO-001")
    assert finding.severity == "warning" and "same user" in finding.message


@requires_root
def test_bot_user_reading_the_signer_home_is_critical(open_root):
    home = open_root / "home"
    run_init(home)
    paths = signer_home(home)
    home.chmod(0o755)  # the bot's home may be visible; the signer home must not be
    assert status(audit(home, bot_user="nobody"), "OWL-ISO-001") == "pass"
    paths.home.chmod(0o755)
    (paths.home / "keystore.json").chmod(0o644)
    [finding] = findings(audit(home, bot_user="nobody"), "OWL-ISO-001")
    assert finding.severity == "critical" and "uid 65534" in finding.message


def test_passphrase_in_the_bot_home_is_critical(home):
    signer_home(home)
    write_private_file(home / "secrets" / "signer.passphrase", PASSPHRASE)
    os.chown(home / "signer", 65534, -1) if os.geteuid() == 0 else pytest.skip("needs root to split owners")
    flagged = findings(audit(home, bot_user=str(os.geteuid())), "OWL-ISO-001")
    assert any("passphrase" in f.message and f.severity == "critical" for f in flagged)


def test_gateway_beyond_loopback_needs_a_strong_token(home):
    set_config(home, bot={"gateway": {"host": "0.0.0.0", "port": 8787}})
    [finding] = findings(audit(home), "OWL-GW-001")
    assert finding.severity == "critical"
    write_private_file(home / "secrets" / "gateway.token", b"changeme\n")
    [finding] = findings(audit(home), "OWL-GW-002")
    assert finding.severity == "critical" and "changeme" not in finding.message
    write_private_file(home / "secrets" / "gateway.token", STRONG.encode())
    report = audit(home)
    assert findings(report, "OWL-GW-001") == findings(report, "OWL-GW-002") == []


def test_weak_token_on_loopback_is_only_a_warning(home):
    write_private_file(home / "secrets" / "gateway.token", b"a" * 40)
    [finding] = findings(audit(home), "OWL-GW-002")
    assert finding.severity == "warning"


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=31).filter(lambda t: t.strip() == t))
def test_any_short_token_is_weak(token):
    assert weak_token_reason(token) is not None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcdefghijk"), min_size=32, max_size=200))
def test_few_distinct_characters_are_weak(token):
    assert weak_token_reason(token) is not None


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=64))
def test_random_tokens_are_strong(raw):
    import base64

    token = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    if len(set(token)) >= 12:  # the only way random bytes fail is by being low-entropy themselves
        assert weak_token_reason(token) is None


def test_wildcard_and_empty_allowlists(home):
    env = {"TELEGRAM_BOT_TOKEN": "123456:real-looking-token"}
    set_config(home, bot={"channels": {"telegram": {"allow_from": ["*"]}}})
    assert [f.severity for f in findings(audit(home, env=env), "OWL-ALLOW-001")] == ["critical"]
    set_config(home, bot={"channels": {"telegram": {"allow_from": []}}})
    [finding] = findings(audit(home, env=env), "OWL-ALLOW-002")
    # pairing from the command line works, so an empty allowlist is a note that says how, not a warning
    assert (
        finding.severity == "info"
        and "telegram" in finding.message
        and "owlia pair approve" in finding.message
    )
    assert findings(audit(home, env={}), "OWL-ALLOW-002") == []  # no token: the channel is off
    set_config(home, bot={"channels": {"telegram": {"allow_from": ["1001"]}}})
    report = audit(home, env=env)
    assert findings(report, "OWL-ALLOW-001") == findings(report, "OWL-ALLOW-002") == []


def test_group_chats_with_sign_tools_are_critical(home):
    set_config(
        home,
        bot={
            "channels": {"telegram": {"groups": {"enabled": True, "allow_chats": ["-100"]}}},
            "tools": {"channels": {"telegram": {"allow": ["wallet_balance", "transfer"]}}},
        },
    )
    [finding] = findings(audit(home), "OWL-GRP-001")
    assert finding.severity == "critical" and "transfer" in finding.message
    set_config(
        home,
        bot={
            "channels": {"telegram": {"groups": {"enabled": True, "allow_chats": ["-100"]}}},
            "tools": {"channels": {"telegram": {"allow": ["wallet_balance"]}}},
        },
    )
    assert status(audit(home), "OWL-GRP-001") == "pass"


def test_default_policy_passes(home):
    signer_home(home)
    assert status(audit(home), "OWL-POL-001") == "pass"


def test_policy_without_limits_and_with_unbounded_approvals(home):
    policy = default_policy()
    token = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
    policy["assets"] = [
        {"chain": 31337, "asset": "native", "symbol": "ETH", "decimals": 18},
        {"chain": 31337, "asset": token, "symbol": "TOK", "decimals": 6, "windows": {"24h": "100"}},
    ]
    policy["spenders"] = [
        {"chain": 31337, "address": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "name": "router"}
    ]
    policy["recipients"] = {"unknown": "allow", "untrusted_provenance": "escalate"}
    signer_home(home, yaml.safe_dump(policy))
    report = audit(home)
    assert {(f.id, f.severity) for f in findings(report)} >= {
        ("OWL-POL-001", "warning"),
        ("OWL-POL-002", "critical"),
        ("OWL-POL-003", "warning"),
    }
    assert any("ETH" in f.message for f in findings(report, "OWL-POL-001"))
    assert any("TOK" in f.message for f in findings(report, "OWL-POL-002"))


def test_undecoded_selectors_in_contracts_and_opaque_calls_are_reported(home):
    """A selector under contracts that the signer cannot decode now denies: the audit says why and what to do."""
    policy = default_policy()
    router = "0x3fC91A3afd70395Cd496C647d5a6CC9D4B2b7FAD"
    policy["contracts"] = [
        {"chain": 31337, "address": router, "name": "router", "selectors": ["0x3593564c", "0x82ad56cb"]}
    ]
    policy["opaque_calls"] = [
        {"chain": 31337, "address": router, "selector": "0x24856bc3", "max_value": "0.5"}
    ]
    signer_home(home, yaml.safe_dump(policy))
    found = findings(audit(home), "OWL-POL-004")
    assert [(f.severity, "0x3593564c" in f.message, "0x82ad56cb" in f.message) for f in found] == [
        ("warning", True, False),
        ("info", False, False),
    ]
    assert "0x24856bc3" in found[1].message and "0.5" in found[1].message and "opaque_calls" in found[0].hint


def test_skills_without_a_working_sandbox(home, tmp_path, monkeypatch):
    """The audit asks exactly what the runtime asks (a trial sandbox), so they cannot disagree."""
    assert status(audit(home), "OWL-SKILL-001") == "pass"  # bubblewrap really works here
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'No permissions to create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    set_config(home, bot={"skills": {"backend": "bubblewrap"}})
    [finding] = findings(audit(home), "OWL-SKILL-001")
    assert finding.severity == "critical" and "bubblewrap cannot" in finding.message
    set_config(
        home, bot={"skills": {"backend": "docker", "docker_host": f"unix://{tmp_path}/no-engine.sock"}}
    )
    [finding] = findings(audit(home), "OWL-SKILL-001")
    assert "no Docker engine answers" in finding.message
    set_config(home, bot={"skills": {"backend": "gvisor"}})
    [finding] = findings(audit(home), "OWL-SKILL-001")
    assert "gVisor" in finding.message


def test_secrets_in_config_and_logs_are_found_but_not_repeated(home):
    key = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
    with open(home / "config.yaml", "a") as handle:
        handle.write(f"# my wallet: {key}\n")
    (home / "logs").mkdir(mode=0o700)
    write_private_file(home / "logs" / "bot.log", b"calling with sk-ant-api03-" + b"Ab1" * 30 + b"\n")
    report = audit(home)
    assert [f.severity for f in findings(report, "OWL-SEC-001")] == ["critical"]
    assert [f.severity for f in findings(report, "OWL-SEC-002")] == ["critical"]
    assert key not in report.model_dump_json() and "Ab1Ab1" not in report.model_dump_json()


def test_the_bots_own_audit_log_is_not_a_false_alarm_but_a_key_inside_it_is(home):
    """Hash-chain links and tx hashes are 64 hex like a private key; read as data they are public."""
    from bot.observability.audit import BotAudit

    log = BotAudit(home / "logs" / "bot-audit.jsonl")
    tx_hash = "0x" + "ab" * 32
    log.record(
        "tool.finished", tool="transfer", outcome="signed", data={"tx_hash": tx_hash, "status": "signed"}
    )
    log.record("tool.finished", tool="transfer", outcome="signed", result=f"sent; tx {tx_hash}")
    assert findings(audit(home), "OWL-SEC-002") == []
    key = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
    with open(home / "logs" / "bot-audit.jsonl", "a") as handle:  # as if something bypassed redaction
        handle.write(
            json.dumps({"kind": "tool.finished", "result": f"the key is {key}", "hash": "cd" * 32}) + "\n"
        )
    [finding] = findings(audit(home), "OWL-SEC-002")
    assert finding.severity == "critical" and "private_key" in finding.message and key not in finding.message


def test_the_bots_audit_chains_pass_when_intact_and_a_removed_record_is_flagged(home):
    from bot.observability.audit import BotAudit, bot_audit_path, skills_audit_path

    assert status(audit(home), "OWL-LOG-001") == "skip"  # no tool has run yet
    for n in range(3):
        BotAudit(bot_audit_path(home)).record("tool.finished", tool="balance", n=n)
    skills = [BotAudit(skills_audit_path(home)) for _ in range(2)]  # the skills and MCP hosts share one log
    skills[0].record("skill.call", n=0)
    skills[1].record("mcp.call", n=1)
    skills[0].record("skill.call", n=2)
    assert status(audit(home), "OWL-LOG-001") == "pass"
    lines = bot_audit_path(home).read_text().splitlines(keepends=True)
    bot_audit_path(home).write_text(lines[0] + lines[2])  # a record taken out
    [finding] = findings(audit(home), "OWL-LOG-001")
    assert finding.severity == "warning" and "bot-audit.jsonl: line 2: broken link" in finding.message
    assert finding.message.endswith("; intact before it: 1")


@pytest.mark.chain
def test_session_keys_past_ttl_and_over_cap(make_stack, anvil, tmp_path):
    from bot.devchain import rpc

    stack = make_stack().start()
    key = stack.funded_session_key()
    report = audit(stack.home)
    assert status(report, "OWL-KEY-001") == "pass", findings(report, "OWL-KEY-001")
    later = audit(stack.home, now=key["expires_at"] + 1)
    assert [f.id for f in findings(later, "OWL-KEY-001")] == ["OWL-KEY-001"]
    cap = int(key["balance_cap"])
    rpc(anvil.url, "anvil_setBalance", [key["address"], hex(cap + 1)])
    [finding] = findings(audit(stack.home), "OWL-KEY-002")
    assert finding.severity == "warning" and str(cap) in finding.message


def test_cli_json_report_and_fix(home):
    (home / "config.yaml").chmod(0o644)
    runner = CliRunner()
    env = {"OWLIA_HOME": str(home)}
    result = runner.invoke(security_cmd.app, ["audit", "--json"], env=env)
    report = Report.model_validate(json.loads(result.output))
    assert result.exit_code == 0 and report.kind == "security-audit"
    assert [f.id for f in report.findings()] == ["OWL-PERM-001"]
    result = runner.invoke(security_cmd.app, ["audit", "--fix"], env=env)
    assert result.exit_code == 0 and "fixed: chmod 0600" in result.output
    assert stat.S_IMODE((home / "config.yaml").stat().st_mode) == 0o600


@settings(max_examples=100, deadline=None)
@given(mode=st.integers(min_value=0, max_value=0o777), allowed=st.sampled_from([0o600, 0o700, 0o660]))
def test_fix_only_ever_removes_bits(tmp_path_factory, mode, allowed):
    from bot.ops.checks import Severity, too_open
    from bot.ops.fix import apply_fix

    path = tmp_path_factory.mktemp("m") / "f"
    path.write_text("x")
    path.chmod(mode)
    finding = too_open("OWL-T", Severity.CRITICAL, path, allowed)
    assert (finding is None) == (mode & ~allowed == 0)
    if finding is not None:
        apply_fix(finding)
    after = stat.S_IMODE(path.stat().st_mode)
    assert after == mode & allowed and after & ~mode == 0


def test_unknown_bot_user_is_an_error_not_a_crash(home):
    result = CliRunner().invoke(
        security_cmd.app, ["audit", "--bot-user", "no-such-user-owlia"], env={"OWLIA_HOME": str(home)}
    )
    assert result.exit_code == 1 and "no user named" in result.output


def test_cli_exits_nonzero_on_critical(home):
    (home / "secrets" / "x.token").write_text("x")
    (home / "secrets" / "x.token").chmod(0o666)
    result = CliRunner().invoke(security_cmd.app, ["audit"], env={"OWLIA_HOME": str(home)})
    assert result.exit_code == 1 and "CRITICAL OWL-PERM-002" in result.output


def test_client_token_lifetimes_are_bounded_and_an_eternal_one_is_flagged(home):
    """`--ttl-days 0` once issued a token that never expires; now only `--no-expiry` does, loudly."""
    import subprocess
    import sys
    import time

    from signer.store.db import connect

    paths = signer_home(home)

    def owlia(*args: str) -> subprocess.CompletedProcess:
        env = {
            **os.environ,
            "OWLIA_SIGNER_PASSPHRASE": PASSPHRASE.decode(),
        }  # issuing a token unlocks the keystore
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", "--home", str(home), "signer", "client", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    for bad in (["--ttl-days", "0"], ["--ttl-days", "-3"], ["--ttl-days", "366"]):
        refused = owlia("add", "bad", "--scope", "read", *bad)
        assert (
            refused.returncode == 1
            and "between 1 and 365" in refused.stderr
            and "--no-expiry" in refused.stderr
        )
        assert "owl_" not in refused.stdout
    both = owlia("add", "bad", "--ttl-days", "5", "--no-expiry")
    assert both.returncode == 1 and "not both" in both.stderr

    before = time.time()
    assert owlia("add", "dflt", "--scope", "read").returncode == 0
    assert owlia("add", "year", "--scope", "read", "--ttl-days", "365").returncode == 0
    assert status(audit(home), "OWL-TOK-001") == "pass"  # the init admin token is not flagged

    eternal = owlia("add", "forever", "--scope", "sign", "--no-expiry")
    assert eternal.returncode == 0 and eternal.stdout.startswith("owl_") and "never expires" in eternal.stderr
    conn = connect(paths.db, readonly=True)
    rows = dict(conn.execute("SELECT name, expires_at FROM clients").fetchall())
    conn.close()
    assert rows["forever"] is None and rows["admin"] is None
    assert 90 * 86400 <= rows["dflt"] - before <= 90 * 86400 + 60
    assert 365 * 86400 <= rows["year"] - before <= 365 * 86400 + 60
    assert "bad" not in rows
    [finding] = findings(audit(home), "OWL-TOK-001")
    assert (
        finding.severity == "warning" and "'forever'" in finding.message and "revoke forever" in finding.hint
    )
    assert owlia("revoke", "forever").returncode == 0
    assert status(audit(home), "OWL-TOK-001") == "pass"


def test_add_client_refuses_lifetimes_out_of_range(tmp_path):
    from signer.auth import MAX_TOKEN_TTL_DAYS, add_client
    from signer.store.db import connect, ensure_schema
    from signer.wire.protocol import Scope

    conn = connect(tmp_path / "s.db")
    ensure_schema(conn)
    for ttl in (0, -1, MAX_TOKEN_TTL_DAYS * 86400 + 1, 1.5):
        with pytest.raises(ValueError, match="lifetime"):
            add_client(conn, "x", Scope.READ, ttl_seconds=ttl)
    assert add_client(conn, "x", Scope.READ, ttl_seconds=1, now=100.0)[0].expires_at == 101.0
