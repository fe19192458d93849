"""`owlia signer` and `owlia policy` used wrongly, as the real process: a worded `error:` that says what
to do, exit 1, no traceback, and no state changed by a command that failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FRIEND, PASSPHRASE

ROOT = Path(__file__).resolve().parents[2]


def owlia(home: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *argv],
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def worded(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    said = done.stderr[done.stderr.find("error: ") :]
    assert "error: " in done.stderr and all(w in said for w in words), done.stderr[-2000:]


@pytest.fixture(scope="module")
def signer_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An initialised signer home (not serving) and its passphrase file."""
    base = tmp_path_factory.mktemp("misuse")
    passfile = base / "pass"
    passfile.write_bytes(PASSPHRASE)
    passfile.chmod(0o600)
    home = base / "home"
    done = owlia(home, "signer", "init", "--passphrase-file", str(passfile))
    assert done.returncode == 0, done.stderr
    return home, passfile


def test_client_add_out_a_directory_is_refused_before_the_client_exists(
    signer_home: tuple[Path, Path], tmp_path: Path
) -> None:
    """`--out DIR`: the client was added, then the write failed with a traceback, and the token (shown
    nowhere) was lost while the client stayed active."""
    home, passfile = signer_home
    worded(
        owlia(
            home,
            "signer",
            "client",
            "add",
            "cli-dir",
            "--out",
            str(tmp_path),
            "--passphrase-file",
            str(passfile),
        ),
        f"--out {tmp_path} is a directory",
        "signer.token",
    )
    listed = owlia(home, "signer", "client", "list")
    assert listed.returncode == 0 and "cli-dir" not in listed.stdout, listed.stdout
    token = tmp_path / "cli.token"
    added = owlia(
        home, "signer", "client", "add", "cli-dir", "--out", str(token), "--passphrase-file", str(passfile)
    )
    assert added.returncode == 0, added.stderr  # the name was never taken
    assert (
        token.stat().st_mode & 0o777 == 0o600 and token.read_text().strip() not in added.stdout + added.stderr
    )


INTENT = json.dumps({"chain_id": 31337, "to": FRIEND, "value": "1"})


@pytest.mark.parametrize(
    ("intent", "words"),
    [
        ("@{tmp}", ("cannot read the intent file", "Is a directory")),
        ("@{tmp}/none.json", ("cannot read the intent file", "No such file")),
    ],
)
def test_policy_check_intent_file_that_cannot_be_read(
    signer_home: tuple[Path, Path], tmp_path: Path, intent: str, words: tuple[str, ...]
) -> None:
    home, _ = signer_home
    policy = home / "signer" / "policy.yaml"
    worded(
        owlia(home, "policy", "check", "--policy", str(policy), "--intent", intent.format(tmp=tmp_path)),
        *words,
    )


@pytest.mark.parametrize(
    "spent",
    [
        '{"a": 1}',
        "[1]",
        '{"31337:native:86400": -5}',
        '{"31337:native:86400": 1.5}',
        '{"31337:native:86400": null}',
        "x",
    ],
)
def test_policy_check_bad_spent_shows_the_shape(signer_home: tuple[Path, Path], spent: str) -> None:
    """int()'s own words ("invalid literal for int() with base 10") or a traceback before; a negative or
    fractional amount was taken (a negative one previews a bigger budget than the policy gives)."""
    home, _ = signer_home
    policy = home / "signer" / "policy.yaml"
    worded(
        owlia(home, "policy", "check", "--policy", str(policy), "--intent", INTENT, "--spent", spent),
        "bad --spent",
        '"31337:native:86400"',
    )


STALE = "owl_stale_" + "x" * 40


def test_a_refused_client_token_names_the_token_and_the_way_out(stack) -> None:
    """The signer's "invalid, expired or revoked token" alone named neither the token nor what to do."""
    admin = stack.paths.admin_token
    aside = admin.with_name("admin.token.aside")
    admin.rename(aside)  # `owlia signer status` then asks as this home's client
    try:
        token = stack.home / "secrets" / "signer.token"
        token.parent.mkdir(mode=0o700, exist_ok=True)
        token.write_text(STALE + "\n")
        token.chmod(0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
        worded(
            stack.owlia("signer", "status", env=env),
            "invalid, expired or revoked token",
            str(token),
            "owlia signer client add",
        )
        worded(
            stack.owlia("signer", "status", env={**env, "OWLIA_SIGNER_TOKEN": STALE}),
            "$OWLIA_SIGNER_TOKEN",
            "owlia signer client add",
        )
    finally:
        aside.rename(admin)


def test_the_admin_token_is_checked_like_a_client_token(stack) -> None:
    """admin.token readable by others was used without a word (the client token's mode was checked); a
    stale one got the signer's bare refusal."""
    admin = stack.paths.admin_token
    good = admin.read_text()
    try:
        admin.chmod(0o644)
        worded(stack.owlia("signer", "session-key", "list"), f"chmod 600 {admin}")
        admin.chmod(0o600)
        admin.write_text(STALE + "\n")
        worded(stack.owlia("signer", "session-key", "list"), f"the admin token in {admin}")
    finally:
        admin.write_text(good)
        admin.chmod(0o600)
    assert stack.owlia("signer", "session-key", "list").returncode == 0


@pytest.mark.parametrize("count", ["-1", "0"])
def test_audit_tail_needs_a_positive_count(signer_home: tuple[Path, Path], count: str) -> None:
    """`owlia audit tail -n -1` printed `[]` and exit 0, as if the log were empty."""
    home, _ = signer_home
    done = owlia(home, "audit", "tail", "-n", count)
    assert done.returncode == 2 and "Invalid value for '-n'" in done.stderr, (done.returncode, done.stdout)


def test_a_second_signer_on_a_live_socket_is_refused_before_unlocking(stack) -> None:
    """`owlia signer serve` while one serves printed RuntimeError's traceback, after unlocking the keystore."""
    done = stack.owlia("signer", "serve")
    worded(done, f"another signer is already listening on {stack.socket}", "stop that one first")
    assert "signer unlocked" not in done.stderr
    assert stack.owlia("signer", "status").returncode == 0  # the first one is untouched


def test_a_file_where_the_socket_goes_is_named(signer_home: tuple[Path, Path]) -> None:
    home, passfile = signer_home
    sock = home / "signer" / "signer.sock"
    sock.write_text("not a socket\n")
    try:
        worded(
            owlia(home, "signer", "serve", "--passphrase-file", str(passfile)),
            f"{sock} exists and is not a socket",
            "move it away",
        )
    finally:
        sock.unlink()
