"""`owlia bridge serve` on a port that is taken says so and exits (it used to print the bind error and hang,
ignoring Ctrl-C and SIGTERM)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def test_a_taken_port_is_a_clear_error_and_a_prompt_exit(tmp_path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        env = {**os.environ, "OWLIA_HOME": str(tmp_path / "home"), "OWLIA_BRIDGE_TOKEN": "owl_unused"}
        done = subprocess.run(
            [sys.executable, "-m", "bot.cli", "bridge", "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        holder.close()
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr
