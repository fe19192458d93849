"""The compose file and the Dockerfiles, read and held to the deployment's rules one by one.

No container engine runs here, so these parse the files as the engine would and check each
rule from the self-hosting issue; `docker/docker-compose.yml` must be exactly the document
bot/ops/compose.py generates, so the rules tested on one hold for the other.
"""

from __future__ import annotations

import ipaddress
import re
import stat
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from bot.cli import init_cmd
from bot.config import BotConfig
from bot.ops.compose import BOT_UID, BRIDGE_UID, SIGNER_UID, SOCKET_GID, compose_document
from signer.wire.settings import signer_home, socket_path

DOCKER = Path(__file__).resolve().parents[2] / "docker"
ROLES = ("signer", "bot", "bridge")
COMPILERS = ("build-essential", "gcc", "g++", "make", "clang", "cc ", "rustc", "cargo")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())


def services(compose: dict, with_anvil: bool = True) -> dict:
    return {k: v for k, v in compose["services"].items() if with_anvil or k != "anvil"}


def test_checked_in_compose_is_the_generated_one(compose):
    assert compose == compose_document(build_context="..")


def test_the_three_roles_and_an_anvil_profile(compose):
    assert set(compose["services"]) == {"signer", "bot", "bridge", "anvil"}
    assert compose["services"]["anvil"]["profiles"] == ["anvil"]
    for role in ROLES:
        assert "profiles" not in compose["services"][role]
        assert compose["services"][role]["build"]["dockerfile"] == f"docker/{role}.Dockerfile"


def test_distinct_non_root_uids(compose):
    uids = {name: svc["user"].split(":")[0] for name, svc in services(compose).items()}
    assert len(set(uids.values())) == len(uids)
    assert all(uid.isdigit() and int(uid) >= 1000 for uid in uids.values())
    assert (
        uids["signer"] == str(SIGNER_UID)
        and uids["bot"] == str(BOT_UID)
        and uids["bridge"] == str(BRIDGE_UID)
    )


def _volume_sources(svc: dict) -> dict[str, str]:
    out = {}
    for entry in svc.get("volumes", []):
        source, target = entry.split(":")[:2]
        out[source] = target
    return out


def test_signer_data_only_in_the_signer(compose):
    for name, svc in services(compose).items():
        sources = _volume_sources(svc)
        assert ("signer-data" in sources) == (name == "signer")
        assert not any(target.startswith("/owlia/signer") for target in sources.values()) or name == "signer"


def test_socket_shared_through_its_own_volume_and_group(compose):
    signer = compose["services"]["signer"]
    assert signer["user"] == f"{SIGNER_UID}:{SOCKET_GID}"  # the socket is born in the socket group
    for name in ("bot", "bridge"):
        svc = compose["services"][name]
        assert "signer-socket:/run/owlia:ro" in svc["volumes"]
        assert svc["group_add"] == [str(SOCKET_GID)]
        assert "signer-socket" in _volume_sources(svc)
    config = yaml.safe_load(init_config_text())
    assert (
        str(socket_path(Path("/owlia"), BotConfig.model_validate(config).signer)) == "/run/owlia/signer.sock"
    )


def init_config_text() -> str:
    from bot.ops.compose import container_config

    return container_config()


def test_container_config_keeps_signer_home_on_the_signer_volume(compose):
    config = BotConfig.model_validate(yaml.safe_load(init_config_text()))
    home = signer_home(Path("/owlia"), config.signer)
    assert _volume_sources(compose["services"]["signer"])["signer-data"] == str(home)
    assert set(config.signer.allowed_uids) == {BOT_UID, BRIDGE_UID}


def test_hardening_on_every_service(compose):
    for name, svc in services(compose).items():
        assert svc["read_only"] is True, name
        assert any(t.startswith("/tmp") for t in svc["tmpfs"]), name
        assert svc["cap_drop"] == ["ALL"] and "cap_add" not in svc, name
        assert "no-new-privileges:true" in svc["security_opt"], name
        assert re.fullmatch(r"\d+m", svc["mem_limit"]) and 0 < svc["pids_limit"] <= 512, name
        assert svc["restart"] in ("unless-stopped", "always", "on-failure"), name
        assert not svc.get("privileged") and svc.get("network_mode") != "host", name


def test_only_loopback_ports(compose):
    for name, svc in services(compose).items():
        for port in svc.get("ports", []):
            host = port.rsplit(":", 2)[0]
            assert ipaddress.ip_address(host).is_loopback, (name, port)
    assert "ports" not in compose["services"]["signer"]


def test_healthchecks(compose):
    """Cheap probes (stdlib only, no CLI start), and the bot's is liveness, not readiness."""
    signer = compose["services"]["signer"]["healthcheck"]["test"]
    assert signer[:5] == ["CMD", "python", "-I", "-S", "-c"] and "/run/owlia/signer.sock" in signer[5]
    assert "/livez" in " ".join(compose["services"]["bot"]["healthcheck"]["test"])
    assert "/v1/health" in " ".join(compose["services"]["bridge"]["healthcheck"]["test"])
    for name in ("bot", "bridge", "anvil"):
        test = compose["services"][name]["healthcheck"]["test"]
        assert test[:4] == ["CMD", "python", "-I", "-S"] and "127.0.0.1" in test[-1]
    for name in ("bot", "bridge"):
        assert compose["services"][name]["depends_on"]["signer"]["condition"] == "service_healthy"
    # the compose-stack test probes every second in its own override; a deployment keeps 10 s
    for name in ("signer", "bot", "bridge", "anvil"):
        assert compose["services"][name]["healthcheck"]["interval"] == "10s", name


SECRETISH = re.compile(r"(token|passphrase|password|secret|api_key)", re.I)


def test_no_secret_values_in_the_compose_file(compose):
    from bot.security.redact import contains_secret

    assert not contains_secret((DOCKER / "docker-compose.yml").read_text())
    for name, svc in services(compose).items():
        for key, value in (svc.get("environment") or {}).items():
            assert not SECRETISH.search(key) and not contains_secret(str(value)), (name, key)
    for spec in compose["secrets"].values():
        assert set(spec) == {"file"} and spec["file"].startswith("./secrets/")
    assert compose["services"]["signer"]["secrets"] == ["signer_passphrase"]
    assert "signer_passphrase" not in str(compose["services"]["bot"]) + str(compose["services"]["bridge"])


def test_bot_and_signer_share_no_network(compose):
    signer_nets = set(compose["services"]["signer"]["networks"])
    assert signer_nets.isdisjoint(compose["services"]["bot"]["networks"])
    assert signer_nets.isdisjoint(compose["services"]["bridge"]["networks"])


# ---- Dockerfiles ---------------------------------------------------------------------------


def stages(role: str) -> list[list[str]]:
    """Instructions per build stage, continuation lines joined, comments dropped."""
    text = (DOCKER / f"{role}.Dockerfile").read_text()
    text = re.sub(r"\\\n", " ", text)
    out: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or (not out and line.upper().startswith("ARG ")):
            continue
        if line.upper().startswith("FROM "):
            out.append([])
        out[-1].append(line)
    return out


@pytest.mark.parametrize("role", ROLES)
def test_dockerfile_multi_stage_slim_non_root(role):
    all_stages = stages(role)
    assert len(all_stages) >= 2
    for stage in all_stages:
        assert re.match(r"FROM \$\{OWLIA_BASE_IMAGE\}", stage[0]), stage[0]
    final = all_stages[-1]
    users = [line.split()[1] for line in final if line.startswith("USER ")]
    assert users and users[-1].split(":")[0].isdigit() and int(users[-1].split(":")[0]) >= 1000
    expected = {
        "signer": f"{SIGNER_UID}:{SOCKET_GID}",
        "bot": f"{BOT_UID}:{BOT_UID}",
        "bridge": f"{BRIDGE_UID}:{BRIDGE_UID}",
    }
    assert users[-1] == expected[role]
    assert any(line.startswith("HEALTHCHECK ") for line in final)
    assert any(line.startswith("COPY --from=") for line in final)


@pytest.mark.parametrize("role", ROLES)
def test_no_build_tools_in_the_final_stage(role):
    final = " ".join(stages(role)[-1]).lower()
    for tool in COMPILERS:
        assert tool not in final, tool
    assert "apt-get install" not in final and "pip install" not in final


@pytest.mark.parametrize("role", ROLES)
def test_each_image_installs_its_own_lock_then_the_project_without_resolving(role):
    build = " ".join(stages(role)[0])
    assert f"--require-hashes -r requirements/{role}.txt" in build
    assert re.search(r"pip install --no-deps [^&]*\s\.(\s|$)", build), build
    assert "[bot]" not in build and "[dev]" not in build and "PIP_CONFIG_FILE=/dev/null" in build


@pytest.mark.parametrize("role", (*ROLES, "anvil"))
def test_base_image_pinned_by_digest_and_no_frontend_pull(role):
    text = (DOCKER / f"{role}.Dockerfile").read_text()
    assert "# syntax=" not in text  # BuildKit would fetch a frontend from a registry on every fresh build
    assert re.search(
        r"^ARG OWLIA_BASE_IMAGE=python:3\.11[.0-9]*-slim-bookworm@sha256:[0-9a-f]{64}$", text, re.M
    )
    assert all(
        line.startswith("FROM ${OWLIA_BASE_IMAGE}") for line in text.splitlines() if line.startswith("FROM")
    )


@pytest.mark.parametrize("role", ROLES)
def test_images_ship_compiled_modules(role):
    """The root is read-only and PYTHONDONTWRITEBYTECODE is set: without .pyc every start compiles."""
    assert "compileall" in " ".join(stages(role)[0]) and "--no-compile" not in " ".join(stages(role)[-1])


def test_anvil_image_is_the_locked_npm_release():
    import json

    lock = json.loads((DOCKER.parent / "package-lock.json").read_text())["packages"]
    entry = lock["node_modules/@foundry-rs/anvil-linux-amd64"]
    text = (DOCKER / "anvil.Dockerfile").read_text()
    assert f"ARG ANVIL_VERSION={entry['version']}\n" in text
    assert f"ARG ANVIL_INTEGRITY={entry['integrity']}\n" in text


def test_locks_have_hashes_and_the_smaller_images_stay_small():
    req = DOCKER.parent / "requirements"

    def names(lock: str) -> set[str]:
        text = (req / f"{lock}.txt").read_text()
        pins = re.findall(r"^([A-Za-z0-9._-]+)==", text, re.M)
        assert pins and text.count("--hash=sha256:") >= len(pins)
        return {p.lower() for p in pins}

    signer, bridge, bot = names("signer"), names("bridge"), names("bot")
    for forbidden in (
        "anthropic",
        "openai",
        "python-telegram-bot",
        "discord-py",
        "fastapi",
        "web3",
        "aiohttp",
    ):
        assert forbidden not in signer
    for forbidden in ("anthropic", "openai", "python-telegram-bot", "discord-py", "web3"):
        assert forbidden not in bridge
    assert signer <= bridge <= bot <= names("dev")


def test_images_are_built_here_never_pulled(compose):
    for role in (*ROLES, "anvil"):
        svc = compose["services"][role]
        extra = (
            ["ANVIL_TARBALL"] if role == "anvil" else []
        )  # the tarball's address comes from npm, not from here
        assert svc["pull_policy"] == "build" and svc["build"]["args"] == ["OWLIA_BASE_IMAGE", *extra], role
        assert svc["build"]["network"] == "${OWLIA_BUILD_NETWORK:-default}"
    without = compose_document(build_context=None)
    for role in (*ROLES, "anvil"):
        assert (
            without["services"][role]["pull_policy"] == "never" and "build" not in without["services"][role]
        )


@pytest.mark.parametrize("role", ROLES)
def test_dockerignore_keeps_secrets_and_venvs_out(role):
    ignore = (DOCKER / f"{role}.Dockerfile.dockerignore").read_text().split()
    for pattern in ("**/.venv", "**/secrets", "**/*.token", ".git", "node_modules", "tests"):
        assert pattern in ignore


def test_init_docker_writes_a_ready_setup(tmp_path):
    app = typer.Typer()
    app.command()(init_cmd.init)
    target = tmp_path / "deploy"
    result = CliRunner().invoke(
        app, ["--docker", "--dir", str(target)], env={"OWLIA_HOME": str(tmp_path / "h")}
    )
    assert result.exit_code == 0, result.output
    assert "docker compose run --rm signer signer init" in result.output
    compose = yaml.safe_load((target / "docker-compose.yml").read_text())
    assert compose["services"]["signer"]["build"]["context"]  # points at this checkout
    assert all((target / spec["file"]).is_file() for spec in compose["secrets"].values())
    assert stat.S_IMODE((target / "secrets").stat().st_mode) == 0o700
    for path in (target / "secrets").iterdir():
        # the bridge's certificate is public (the bot verifies the bridge against it); the rest is secret
        assert stat.S_IMODE(path.stat().st_mode) == (0o644 if path.name == "bridge_tls_cert" else 0o600), path
    assert len((target / "secrets" / "signer_passphrase").read_text().strip()) >= 32
    assert (target / "secrets" / "signer_passphrase").read_text() != (
        target / "secrets" / "gateway_token"
    ).read_text()
    BotConfig.model_validate(yaml.safe_load((target / "config.yaml").read_text()))
    from cryptography import x509

    cert = x509.load_pem_x509_certificate((target / "secrets" / "bridge_tls_cert").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    assert "PRIVATE KEY" in (target / "secrets" / "bridge_tls_key").read_text()
    assert (target / "workspace" / "AGENTS.md").is_file()
    before = (target / "secrets" / "gateway_token").read_text()
    again = CliRunner().invoke(
        app, ["--docker", "--dir", str(target)], env={"OWLIA_HOME": str(tmp_path / "h")}
    )
    assert (
        again.exit_code == 0 and (target / "secrets" / "gateway_token").read_text() == before
    )  # never overwrites


def test_init_docker_default_dir_keeps_the_home_private(tmp_path):
    app = typer.Typer()
    app.command()(init_cmd.init)
    home = tmp_path / "fresh-home"
    result = CliRunner().invoke(app, ["--docker"], env={"OWLIA_HOME": str(home)})
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(home.stat().st_mode) == 0o700 and (home / "docker" / "docker-compose.yml").is_file()


def test_every_declared_dependency_is_locked():
    """A dependency added to pyproject.toml without re-running `.ci/lock` fails here, not in CI's install."""
    import tomllib

    project = tomllib.loads((DOCKER.parent / "pyproject.toml").read_text())["project"]
    norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
    locked = {
        norm(n)
        for n in re.findall(
            r"^([A-Za-z0-9._-]+)==", (DOCKER.parent / "requirements" / "dev.txt").read_text(), re.M
        )
    }
    declared = [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra),
    ]
    names = {norm(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in declared} - {"owliabot"}
    assert names <= locked, sorted(names - locked)
