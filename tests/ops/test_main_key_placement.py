"""OWL-MAIN-001: `owlia security audit`, run as a real process, reports a main-key keystore on the
signer's host (the single-host layout's `<home>/companion`, or anywhere under the signer user's home)
as critical, and one elsewhere on the machine only when the signer's user can read it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from policies.kernel.files import write_private_file
from tests.ops.conftest import requires_root, run_init
from tests.ops.test_audit import signer_home

PASS = b"main key passphrase"


def owlia(home: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


def companion_init(home: Path, directory: Path, passfile: Path) -> None:
    done = owlia(
        home,
        "companion",
        "init",
        "--dir",
        str(directory),
        "--passphrase-file",
        str(passfile),
        "--scrypt-n",
        "1024",
    )
    assert done.returncode == 0, done.stderr


def main_key_check(home: Path, *extra: str) -> tuple[int, dict]:
    done = owlia(home, "security", "audit", "--json", *extra)
    report = json.loads(done.stdout)
    return done.returncode, next(c for c in report["checks"] if c["id"] == "OWL-MAIN-001")


def test_the_single_host_companion_in_the_owliabot_home_is_critical(tmp_path):
    home = tmp_path / "home"
    run_init(home)
    signer_home(home)
    passfile = tmp_path / "pass"
    write_private_file(passfile, PASS)
    code, check = main_key_check(home)
    assert check["status"] == "pass", check
    made = owlia(home, "companion", "init", "--passphrase-file", str(passfile), "--scrypt-n", "1024")
    assert made.returncode == 0, made.stderr  # its default directory: <home>/companion
    assert "warning: " in made.stderr and "inside the OwliaBot home, on the signer's host" in made.stderr
    code, check = main_key_check(home)
    assert code == 1 and check["status"] == "fail", check
    [finding] = check["findings"]
    assert finding["severity"] == "critical"
    assert (
        f"{(home / 'companion' / 'keystore.json').resolve()} is on the signer's host, in the OwliaBot home"
        in finding["message"]
    )
    assert "phone" in finding["hint"] and "shred -u" in finding["hint"]
    human = owlia(home, "security", "audit")
    assert human.returncode == 1 and "CRITICAL OWL-MAIN-001" in human.stdout


@requires_root
def test_a_main_key_the_signers_user_can_read_is_critical_and_one_it_cannot_passes(open_root):
    home = open_root / "home"
    run_init(home)
    paths = signer_home(home)
    os.chown(paths.home, 65534, 65534)  # the signer runs as `nobody`; its home dir is /nonexistent
    passfile = open_root / "pass"
    write_private_file(passfile, PASS)
    desktop = open_root / "desktop-user" / "companion"  # another user's CLI companion on the same machine
    desktop.parent.mkdir(mode=0o755)
    companion_init(home, desktop, passfile)
    code, check = main_key_check(home, "--companion-dir", str(desktop))
    assert check["status"] == "pass", check  # 0700/0600, owned by another user: nobody cannot read it
    desktop.chmod(0o755)
    (desktop / "keystore.json").chmod(0o644)
    code, check = main_key_check(home, "--companion-dir", str(desktop))
    assert code == 1 and check["status"] == "fail", check
    [finding] = check["findings"]
    assert finding["severity"] == "critical"
    assert (
        f"the signer's user (uid 65534) can read the main key's keystore {desktop / 'keystore.json'}"
        in finding["message"]
    )


@requires_root
def test_a_companion_anywhere_under_the_signer_users_home_is_critical(open_root):
    """pytest runs as root here, so the signer's user is root and its home /root: a companion a few
    levels down in it (made and removed by this test) is found without being named."""
    import pwd
    import shutil

    if Path(pwd.getpwuid(os.geteuid()).pw_dir).resolve() != Path("/root"):
        pytest.skip("the signer's user has no home this test may write to")
    home = open_root / "home"
    run_init(home)
    signer_home(home)
    nested = Path("/root") / f".owlia-audit-test-{os.getpid()}" / "wallet"
    passfile = open_root / "pass"
    write_private_file(passfile, PASS)
    try:
        companion_init(home, nested, passfile)
        code, check = main_key_check(home)
        assert code == 1 and check["status"] == "fail", check
        assert any(
            "in the signer user's home" in f["message"] and str(nested) in f["message"]
            for f in check["findings"]
        ), check
    finally:
        shutil.rmtree(nested.parent, ignore_errors=True)
