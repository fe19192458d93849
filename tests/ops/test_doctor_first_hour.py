"""`owlia doctor`, run as a real process on a first-hour setup: docker installed for something else
(this machine has a docker CLI without Compose v2, as the README's `apt-get install docker.io` gives)
is no critical finding unless this install uses compose, and a bridge `owlia bridge serve` runs with
its defaults (http on 127.0.0.1:8765) is found without OWLIA_BRIDGE_URL."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bot.ops.compose import HEADER
from bot.ops.doctor import COMPOSE_MARK
from policies.kernel.files import write_private_file
from tests.ops.conftest import run_init


def doctor(home: Path, cwd: Path, **env: str) -> tuple[int, dict]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "doctor", "--json", "--timeout", "2"],
        env={**base, **env},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    report = json.loads(done.stdout)
    return done.returncode, {c["id"]: c for c in report["checks"]}


def compose_v2_missing() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return (
        subprocess.run([docker, "compose", "version", "--short"], capture_output=True, timeout=30).returncode
        != 0
    )


def test_the_compose_mark_is_the_first_line_of_the_file_init_writes():
    assert HEADER.startswith(COMPOSE_MARK)


@pytest.mark.skipif(not compose_v2_missing(), reason="needs a docker CLI without Compose v2 (docker.io)")
def test_docker_without_compose_fails_only_an_install_that_uses_compose(tmp_path):
    home = tmp_path / "home"
    run_init(home)
    _, checks = doctor(home, tmp_path)
    assert checks["DOC-COMPOSE-001"]["status"] == "skip", checks["DOC-COMPOSE-001"]
    assert "does not run on Compose" in checks["DOC-COMPOSE-001"]["detail"]
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "docker-compose.yml").write_text(
        HEADER + "services: {}\n"
    )  # `cd DIR` after `init --docker --dir DIR`
    code, checks = doctor(home, deploy)
    assert code == 1 and checks["DOC-COMPOSE-001"]["status"] == "fail"
    [finding] = checks["DOC-COMPOSE-001"]["findings"]
    assert finding["severity"] == "critical" and "Compose v2 (`docker compose`) is not" in finding["message"]


def default_bridge_port_is_free() -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", 8765))
        except OSError:
            return False
    return True


@pytest.mark.chain
def test_a_bridge_serving_http_by_default_is_found_without_naming_it(make_stack, tmp_path):
    from signer.wire.protocol import Scope

    if not default_bridge_port_is_free():
        pytest.skip("127.0.0.1:8765 is taken by someone else's process")
    stack = make_stack().start()
    token_file = tmp_path / "bridge.token"
    write_private_file(token_file, stack.client_token("bridge", Scope.BRIDGE).encode())
    bridge = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "--home",
            str(stack.home),
            "bridge",
            "serve",
            "--token-file",
            str(token_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert bridge.poll() is None, bridge.stderr.read()
            try:
                urllib.request.urlopen("http://127.0.0.1:8765/v1/health", timeout=1).close()  # noqa: S310
                break
            except OSError:
                assert time.monotonic() < deadline, "the bridge did not come up"
                time.sleep(0.1)
        _, checks = doctor(stack.home, tmp_path)
        check = checks["DOC-BRIDGE-001"]
        assert check["status"] == "fail", check  # found: a warning that no companion is connected, not a skip
        [finding] = check["findings"]
        assert finding["severity"] == "warning" and "no companion is connected" in finding["message"]
    finally:
        bridge.terminate()
        bridge.wait(timeout=15)
