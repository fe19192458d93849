"""`owlia signer serve` hands the daemon to its own small program (signer.serve) once it knows the
passphrase can be read there: the daemon keeps no command-line machinery in memory, and starts,
serves and refuses exactly as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import PASSPHRASE


def _modules_of(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_serve_with_a_passphrase_file_becomes_the_lean_program(stack):
    """Same pid (the caller's SIGTERM reaches the daemon), now `-m signer.serve`, and it serves."""
    assert stack.process is not None
    argv = _modules_of(stack.process.pid)
    assert "-m signer.serve" in argv and "--passphrase-file" in argv, argv
    assert str(PASSPHRASE.decode()) not in argv  # the passphrase is read from the file, never passed
    assert stack.call_sync(stack.admin_token, "status")["unlocked"] is True
    code = (
        "import sys, json, signer.serve\n"
        "print(json.dumps([m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'bot')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # the program itself loads no command-line machinery
    stack.stop()  # SIGTERM to the pid the caller started: a clean stop


def test_the_lean_program_refuses_what_the_command_refused(make_stack, tmp_path):
    stack = make_stack()
    wrong = tmp_path / "wrong"
    wrong.write_bytes(b"not the passphrase\n")
    wrong.chmod(0o600)
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "--home",
            str(stack.home),
            "signer",
            "serve",
            "--passphrase-file",
            str(wrong),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 1 and "error:" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert not stack.socket.exists()
    wrong.chmod(0o644)  # readable by others: refused before anything is unlocked
    loose = subprocess.run(
        [sys.executable, "-m", "signer.serve", "--home", str(stack.home), "--passphrase-file", str(wrong)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loose.returncode == 1 and "chmod 600" in loose.stderr, loose.stderr
    empty = tmp_path / "empty-home"
    empty.mkdir(mode=0o700)
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "--home",
            str(empty),
            "signer",
            "serve",
            "--passphrase-file",
            str(stack.passfile),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OWLIA_HOME": str(empty)},
    )
    assert missing.returncode == 1 and "owlia signer init" in missing.stderr, missing.stderr


def test_the_lean_program_reads_its_two_options_and_refuses_anything_else():
    from signer.serve import HelpWanted, UsageError, parse_args

    assert parse_args(["--home", "/h"]) == {"--home": Path("/h")}
    assert parse_args(["--passphrase-file=/p", "--home=/h"]) == {
        "--home": Path("/h"),
        "--passphrase-file": Path("/p"),
    }
    for argv, problem in (
        ([], "--home is required"),
        (["--home"], "--home needs a value"),
        (["--home", "--passphrase-file", "/p"], "--home needs a value"),
        (["--home="], "needs a value"),
        (["--home", "/a", "--home", "/b"], "given twice"),
        (["--home", "/h", "extra"], "unknown"),
        (["--home", "/h", "--passphrase", "x"], "unknown argument '--passphrase'"),
    ):
        try:
            parse_args(argv)
        except UsageError as exc:
            assert problem in str(exc), (argv, exc)
        else:
            raise AssertionError(f"accepted {argv}")
    for argv in (["-h"], ["--home", "/h", "--help"]):
        try:
            parse_args(argv)
        except HelpWanted:
            pass
        else:
            raise AssertionError(f"no help for {argv}")


def test_a_wrong_command_line_says_how_to_call_it_and_exits_2():
    out = subprocess.run(
        [sys.executable, "-m", "signer.serve", "--hom", "/x"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "usage: python -m signer.serve --home HOME" in out.stderr, out.stderr
    assert "unknown argument '--hom'" in out.stderr and "Traceback" not in out.stderr
    usage = subprocess.run(
        [sys.executable, "-m", "signer.serve", "--help"], capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 0 and "--passphrase-file FILE" in usage.stdout
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, signer.serve, json; signer.serve.load_no_pydantic_plugins(); "
            "print(json.dumps([m for m in ('argparse', 'shutil') if m in sys.modules]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    # argparse with shutil: about 0.36 MB the daemon would hold for its whole life (getpass, 56 KiB
    # there, is imported at the top of policies.kernel.passphrase: bench/lazy_imports.py)
    assert probe.stdout.strip() == "[]"
