"""The first hour, as real processes: `owlia start` with no config points to `owlia init` instead of
running forever with no channel; one home runs one bot, so `owlia start` or a second `owlia up` beside
`owlia up` (and `owlia up` beside `owlia start`) is refused in words before it starts anything."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from bot.devchain import free_port


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OWLIA_", "TELEGRAM_", "DISCORD_"))}
    env.update(HOME=str(tmp_path), PYTHONUNBUFFERED="1")
    return env


def owlia(home: Path, env: dict, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_line(proc: subprocess.Popen, stream, text: str, timeout: float = 120) -> str:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        seen.append(line)
        if text in line:
            return "".join(seen)
        assert line or proc.poll() is None, "".join(seen)
    raise AssertionError(f"no {text!r}:\n" + "".join(seen))


def nothing_listens_on(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_start_without_a_config_points_to_init(tmp_path):
    home = tmp_path / "fresh"
    done = owlia(home, env_for(tmp_path), "start", timeout=60)
    assert done.returncode == 1
    assert (
        f"no config.yaml in {home}: run `owlia init` first" in done.stderr and "Traceback" not in done.stderr
    )


def test_one_bot_per_home_beside_up_and_beside_start(tmp_path):
    env = env_for(tmp_path)
    home = tmp_path / "home"
    assert owlia(home, env, "init").returncode == 0
    port = free_port()
    up = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "up", "--port", str(port)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_line(up, up.stdout, "console channel below")
        started = owlia(home, env, "start", timeout=60)
        assert started.returncode == 1 and "another bot is already running on" in started.stderr, (
            started.stderr
        )
        assert f"(pid {up.pid})" in started.stderr and "one home runs one bot" in started.stderr
        other = free_port()
        second = owlia(home, env, "up", "--port", str(other), timeout=60)
        assert second.returncode == 1 and "another bot is already running on" in second.stderr, second.stderr
        assert nothing_listens_on(other)  # refused before it started a chain
        assert f"http://127.0.0.1:{port}" in (home / "config.yaml").read_text()  # nor recorded its port
        up.stdin.write("/quit\n")
        up.stdin.flush()
        assert up.wait(timeout=60) == 0
    finally:
        if up.poll() is None:
            os.killpg(up.pid, 15)
            up.wait(timeout=30)
    start = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "start"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = wait_line(start, start.stderr, "nobody can reach this bot")
        assert "running with no chat channel" in said and "owlia chat" in said
        refused = owlia(home, env, "up", "--port", str(free_port()), timeout=60)
        assert refused.returncode == 1 and f"(pid {start.pid})" in refused.stderr, refused.stderr
    finally:
        start.terminate()
        start.wait(timeout=30)
