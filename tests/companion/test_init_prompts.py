"""`owlia companion init` on a terminal: the new passphrase is asked twice, and the user is told to back
the keystore up (it asked once, without confirmation, and gave no backup advice)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path


def converse(
    argv: list[str], answers: list[str], env: dict[str, str], timeout: float = 60
) -> tuple[int, str]:
    """Run argv on a real pseudo-terminal, typing each answer after the next prompt ending in ': '."""
    main, child = pty.openpty()

    def controlling_terminal() -> None:  # getpass reads /dev/tty: the pty must be the child's terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        argv,
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        close_fds=True,
        start_new_session=True,
        preexec_fn=controlling_terminal,
    )
    os.close(child)
    seen, pending, given = b"", list(answers), 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(main, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if pending and seen.count(b"passphrase: ") > given:
                os.write(main, (pending.pop(0) + "\n").encode())
                given += 1
        elif proc.poll() is not None:
            break
    os.close(main)
    return proc.wait(10), seen.decode(errors="replace")


def command(home: Path, directory: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bot.cli",
        "--home",
        str(home),
        "companion",
        "init",
        "--dir",
        str(directory),
        "--scrypt-n",
        "1024",
    ]


def test_the_passphrase_is_asked_twice_and_a_backup_is_urged(tmp_path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    code, out = converse(
        command(tmp_path / "h", tmp_path / "one"), ["correct horse battery", "correct horse batterY"], env
    )
    assert code == 1 and "the two passphrases differ; nothing was created" in out
    assert not (tmp_path / "one" / "keystore.json").exists()

    code, out = converse(command(tmp_path / "h", tmp_path / "two"), ["short", "short"], env)
    assert code == 1 and "shorter than 8 characters" in out

    code, out = converse(command(tmp_path / "h", tmp_path / "three"), ["correct horse battery"] * 2, env)
    assert code == 0, out
    assert "Repeat the passphrase" in out and "BACK IT UP NOW" in out and str(tmp_path / "three") in out
    assert "correct horse battery" not in out  # never echoed
    assert (tmp_path / "three" / "keystore.json").exists()
