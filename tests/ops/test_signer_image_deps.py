"""The signer image's dependency set: install exactly what signer.Dockerfile installs into a clean
venv and prove the signer runs there while no LLM SDK, chat library, web framework or web3 is
importable at all (not merely unimported, as tests/signer/test_import_closure.py checks).

The venv is cached under /tmp by a hash of the dependency list, built in a private temp dir and
renamed into place only when complete, so a crashed run never leaves a half-built cache behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pytest

from signer.wire.blocking import BlockingSignerClient

ROOT = Path(__file__).resolve().parents[2]
# modules (the docker SDK is left to the distribution check: the repo's docker/ dir is a namespace package)
FORBIDDEN = (
    "anthropic",
    "openai",
    "telegram",
    "discord",
    "fastapi",
    "uvicorn",
    "starlette",
    "web3",
    "aiohttp",
    "httpx",
    "websockets",
    "eth_account",
    "nacl",
    "uvloop",
)  # the daemon runs on asyncio's own loop: no libuv where the keys are
FORBIDDEN_DISTS = (
    "anthropic",
    "openai",
    "python-telegram-bot",
    "discord.py",
    "fastapi",
    "uvicorn",
    "starlette",
    "web3",
    "aiohttp",
    "httpx",
    "websockets",
    "eth-account",
    "docker",
    "pynacl",
    "uvloop",
)

pytestmark = pytest.mark.slow


def core_dependencies() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


SIGNER_LOCK = ROOT / "requirements" / "signer.txt"  # what docker/signer.Dockerfile installs


def signer_venv() -> Path:
    deps = core_dependencies()
    lock = SIGNER_LOCK.read_text()
    digest = hashlib.sha256(json.dumps([sys.version, deps, lock]).encode()).hexdigest()[:16]
    cached = Path(tempfile.gettempdir()) / f"owlia-signer-deps-{os.geteuid()}-{digest}"
    if (
        (cached / "READY").is_file()
        and cached.stat().st_uid == os.geteuid()
        and not cached.stat().st_mode & 0o022
    ):
        return cached
    shutil.rmtree(cached, ignore_errors=True)
    build = Path(tempfile.mkdtemp(prefix="owlia-signer-deps-build-"))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(build / "venv")], check=True, timeout=120)
        python = build / "venv" / "bin" / "python"
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--require-hashes", "-r", str(SIGNER_LOCK)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        (build / "venv" / "READY").write_text("\n".join(deps))
        os.replace(build / "venv", cached)  # a venv is relocatable enough for `python -c` after a rename
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return cached


PROBE = """
import importlib.metadata, importlib.util, json, re, sys
import signer.daemon, signer.server, signer.engine, signer.methods, signer.keystore, policies.evaluate
from bot.cli.app import app  # the image's entrypoint: `owlia signer serve`
modules, dists = sys.argv[1].split(","), sys.argv[2].split(",")
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
installed = {norm(d.metadata["Name"]) for d in importlib.metadata.distributions()}
present = [m for m in modules if importlib.util.find_spec(m) is not None]
present += [d for d in dists if norm(d) in installed]
print(json.dumps({"present": present}))
"""


def test_signer_dependency_set_has_no_llm_chat_web_or_web3(tmp_path):
    venv = signer_venv()
    python = venv / "bin" / "python"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    done = subprocess.run(
        [str(python), "-c", PROBE, ",".join(FORBIDDEN), ",".join(FORBIDDEN_DISTS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"present": []}
    # and the signer's CLI really works there: `owlia signer init` on embedded defaults
    home = tmp_path / "home"
    passfile = tmp_path / "pass"
    passfile.write_text("a passphrase for the deps test\n")
    passfile.chmod(0o600)
    init = subprocess.run(
        [
            str(python),
            "-m",
            "bot.cli",
            "--home",
            str(home),
            "signer",
            "init",
            "--passphrase-file",
            str(passfile),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert init.returncode == 0, init.stderr[-3000:]
    assert (home / "signer" / "keystore.json").is_file()
    # and it serves there, on asyncio's own loop (uvloop is not installed): one authenticated call
    serve = subprocess.Popen(
        [
            str(python),
            "-m",
            "bot.cli",
            "--home",
            str(home),
            "signer",
            "serve",
            "--passphrase-file",
            str(passfile),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        socket_path = home / "signer" / "signer.sock"
        deadline = time.monotonic() + 60
        while not socket_path.exists():
            assert serve.poll() is None and time.monotonic() < deadline, serve.stderr.read().decode()[-3000:]
            time.sleep(0.05)
        token = (home / "signer" / "admin.token").read_text().strip()
        with BlockingSignerClient(socket_path, token) as client:
            assert client.identity is not None and client.identity.scope == "admin"
            status = client.call("status")
            assert status.unlocked is True and status.frozen is False  # type: ignore[attr-defined]
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def test_the_probe_would_see_a_forbidden_package():
    """The check above can fail: the bot's own venv has several of them (the LLM SDKs and python-telegram-bot are gone from it)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(FORBIDDEN), ",".join(FORBIDDEN_DISTS)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert set(json.loads(done.stdout.strip().splitlines()[-1])["present"]) >= {
        "discord",
        "httpx",
        "fastapi",
        "docker",
    }
