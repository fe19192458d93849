"""`owlia signer init`'s "next:" line runs as printed without a terminal: the commands that unlock the
keystore carry the --passphrase-file init was given (run here as real processes, stdin closed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from policies.kernel.files import write_private_file


def owlia_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    env.update(HOME=str(tmp_path), PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}")
    return env


def test_the_next_line_of_signer_init_runs_as_printed_without_a_terminal(tmp_path):
    env = owlia_env(tmp_path)
    home = tmp_path / ".owliabot"
    passfile = tmp_path / "signer pass"  # a space: the printed command must quote it
    write_private_file(passfile, b"a long dev passphrase")
    init = subprocess.run(
        ["owlia", "signer", "init", "--passphrase-file", str(passfile)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stderr
    [line] = [ln for ln in init.stdout.splitlines() if ln.startswith("next:")]
    commands = re.findall(r"`([^`]+)`", line)
    serve = next(c for c in commands if " serve" in c)
    add = next(c for c in commands if " client add" in c)
    assert "--passphrase-file" in serve and "--passphrase-file" in add
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {serve}"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        socket = home / "signer" / "signer.sock"
        deadline = time.monotonic() + 60
        while not socket.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the signer did not start"
            time.sleep(0.1)
        added = subprocess.run(
            ["bash", "-c", add],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert added.returncode == 0, added.stderr
        assert added.stdout.strip().startswith("owl_")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_without_a_passphrase_file_the_next_line_says_how_to_go_without_a_terminal():
    from signer.cli.signer_cmd import next_steps

    assert "without a terminal, add --passphrase-file FILE" in next_steps(None)
