"""`owlia chain dev` words its failures like every other command (policies.kernel.cli.fail): `error: ...`
on stderr and exit 1, with anvil never started on a port someone else holds."""

from __future__ import annotations

import socket
import subprocess
import sys


def test_a_port_in_use_is_a_worded_error_and_exit_1(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with socket.socket() as held:  # our own listener on a port the system picked
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "bot.cli", "--home", str(home), "chain", "dev",
                               "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"error: port {port} on 127.0.0.1 is already in use (`ss -ltnp` shows by what): stop " \
        "that process, or pick another port (`owlia up --port N` on a new home, or edit the dev chain's rpc_url " \
        "in config.yaml)\n"
