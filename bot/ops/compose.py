"""The docker compose deployment: one document, written by `owlia init --docker` and kept in docker/.

The layout is the security boundary, so it lives in code (and `docker/docker-compose.yml` is
checked to be exactly this document): three images, three uids, the signer's data volume in the
signer only, the socket shared through its own volume and one group, nothing published beyond
127.0.0.1, every container read-only with no capabilities.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import site
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bot.workspace import create_workspace
from policies.kernel.files import ensure_private_dir, write_private_file

SIGNER_UID = 10001
BOT_UID = 10002
BRIDGE_UID = 10003
ANVIL_UID = 10004
SOCKET_GID = 10100  # the signer's primary group; the bot and bridge join it to reach the socket
GATEWAY_PORT = 8787
BRIDGE_PORT = 8765
HOME_IN_CONTAINER = "/owlia"
SOCKET_DIR = "/run/owlia"
IMAGE_PREFIX = "owliabot"
# Compose features used here: top-level `name`, `pull_policy: build`, `build.network`, `dockerfile`
# per service. Debian 12's docker-compose 1.29 rejects the file; `owlia doctor` checks this floor.
MIN_COMPOSE_VERSION = (2, 24, 0)
# Builds reach PyPI through this network; `default` normally, `host` on an engine without a bridge.
BUILD_NETWORK = "${OWLIA_BUILD_NETWORK:-default}"

# file under secrets/ -> (owner uid, target inside the container that reads it)
SECRETS: dict[str, tuple[int, str]] = {
    "signer_passphrase": (SIGNER_UID, "signer_passphrase"),
    "signer_token": (BOT_UID, f"{HOME_IN_CONTAINER}/secrets/signer.token"),
    "gateway_token": (BOT_UID, f"{HOME_IN_CONTAINER}/secrets/gateway.token"),
    "telegram_token": (BOT_UID, f"{HOME_IN_CONTAINER}/secrets/telegram.token"),
    "bridge_token": (BRIDGE_UID, f"{HOME_IN_CONTAINER}/secrets/bridge.token"),
    "bridge_tls_cert": (BRIDGE_UID, "bridge_tls_cert"),
    "bridge_tls_key": (BRIDGE_UID, "bridge_tls_key"),
}

PUBLIC_FILES = frozenset({"bridge_tls_cert"})  # under secrets/ for compose's file mounts, but not secret

HEADER = """\
# OwliaBot on docker compose. Generated from bot/ops/compose.py (tests/ops checks they match);
# regenerate with `owlia init --docker` rather than editing by hand.
# Secrets are files under ./secrets (0600, owned by the uid that reads them), never values here.
"""


def _hardened(uid: int, gid: int, *, memory: str, pids: int) -> dict[str, Any]:
    return {
        "user": f"{uid}:{gid}",
        "read_only": True,
        "tmpfs": ["/tmp:size=16m,mode=1777,noexec,nosuid,nodev"],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "mem_limit": memory,
        "pids_limit": pids,
        "restart": "unless-stopped",
    }


def _probe(code: str) -> list[str]:
    # -I -S: stdlib only, no site-packages scan: a few milliseconds, not the CLI's half second
    return ["CMD", "python", "-I", "-S", "-c", code]


def _http_health(url: str) -> list[str]:
    # the bridge's self-signed certificate is for companions to pin; a loopback self-probe skips it
    context = ", context=__import__('ssl')._create_unverified_context()" if url.startswith("https") else ""
    return _probe(f"import urllib.request; urllib.request.urlopen('{url}', timeout=5{context})")


SIGNER_HEALTH = _probe(f"import socket; socket.socket(socket.AF_UNIX).connect('{SOCKET_DIR}/signer.sock')")
ANVIL_HEALTH = _probe(
    "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:8545', "
    'data=b\'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}\', '
    "headers={'Content-Type': 'application/json'}), timeout=5)"
)


def _health(test: list[str]) -> dict[str, Any]:
    return {"test": test, "interval": "10s", "timeout": "5s", "retries": 3, "start_period": "30s"}


def _build(context: str | None, role: str, version: str) -> dict[str, Any]:
    """Images are built here from source, never pulled: `owliabot/*` is published nowhere, and a
    name someone else could publish must not decide what runs next to the keys."""
    out: dict[str, Any] = {"image": f"{IMAGE_PREFIX}/{role}:{version}"}
    if context is None:
        out["pull_policy"] = "never"
        return out
    out["build"] = {
        "context": context,
        "dockerfile": f"docker/{role}.Dockerfile",
        "network": BUILD_NETWORK,
        # unset: the digest-pinned default in the Dockerfile; anvil's tarball address from npm
        "args": ["OWLIA_BASE_IMAGE", *(["ANVIL_TARBALL"] if role == "anvil" else [])],
    }
    out["pull_policy"] = "build"
    return out


def compose_document(*, build_context: str | None = "..", version: str = "0.1.0") -> dict[str, Any]:
    """The compose file as data. `build_context` is the source checkout, relative to the file."""
    home = HOME_IN_CONTAINER
    config_mount = f"./config.yaml:{home}/config.yaml:ro"
    signer = {
        **_build(build_context, "signer", version),
        **_hardened(SIGNER_UID, SOCKET_GID, memory="256m", pids=64),
        "command": ["signer", "serve", "--passphrase-file", "/run/secrets/signer_passphrase"],
        "environment": {"OWLIA_HOME": home},
        "volumes": [config_mount, f"signer-data:{home}/signer", f"signer-socket:{SOCKET_DIR}"],
        "secrets": ["signer_passphrase"],
        "networks": ["signer-net"],
        "healthcheck": _health(SIGNER_HEALTH),
    }
    bot = {
        **_build(build_context, "bot", version),
        **_hardened(BOT_UID, BOT_UID, memory="768m", pids=256),
        "group_add": [str(SOCKET_GID)],
        "command": ["start"],
        # the bridge is another container: its service name, and its certificate names it too
        "environment": {
            "OWLIA_HOME": home,
            "OWLIA_BRIDGE_URL": f"https://bridge:{BRIDGE_PORT}",
            "OWLIA_BRIDGE_CA": "/run/secrets/bridge_tls_cert",
        },
        "volumes": [
            config_mount,
            f"bot-data:{home}",
            f"./workspace:{home}/workspace",
            f"signer-socket:{SOCKET_DIR}:ro",
        ],
        "secrets": [
            {"source": name, "target": SECRETS[name][1]}
            for name in ("signer_token", "gateway_token", "telegram_token")
        ]
        + ["bridge_tls_cert"],  # public: lets the doctor verify the bridge it probes
        "ports": [f"127.0.0.1:{GATEWAY_PORT}:{GATEWAY_PORT}"],
        "networks": ["bot-net"],
        "depends_on": {"signer": {"condition": "service_healthy"}},
        # liveness only: readiness (/health) follows the LLM and the RPC, which must not restart the bot
        "healthcheck": _health(_http_health(f"http://127.0.0.1:{GATEWAY_PORT}/livez")),
    }
    bridge = {
        **_build(build_context, "bridge", version),
        **_hardened(BRIDGE_UID, BRIDGE_UID, memory="256m", pids=64),
        "group_add": [str(SOCKET_GID)],
        # not loopback inside the container, so the bridge insists on TLS (a self-signed pair from init)
        "command": [
            "bridge",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(BRIDGE_PORT),
            "--tls-cert",
            "/run/secrets/bridge_tls_cert",
            "--tls-key",
            "/run/secrets/bridge_tls_key",
        ],
        "environment": {"OWLIA_HOME": home},
        "volumes": [config_mount, f"bridge-data:{home}", f"signer-socket:{SOCKET_DIR}:ro"],
        "secrets": [
            {"source": "bridge_token", "target": SECRETS["bridge_token"][1]},
            "bridge_tls_cert",
            "bridge_tls_key",
        ],
        "ports": [f"127.0.0.1:{BRIDGE_PORT}:{BRIDGE_PORT}"],
        "networks": ["bot-net"],
        "depends_on": {"signer": {"condition": "service_healthy"}},
        "healthcheck": _health(_http_health(f"https://127.0.0.1:{BRIDGE_PORT}/v1/health")),
    }
    anvil = {
        **_build(build_context, "anvil", version),
        **_hardened(ANVIL_UID, ANVIL_UID, memory="256m", pids=64),
        "profiles": ["anvil"],
        "command": ["--host", "0.0.0.0", "--port", "8545"],
        "environment": {"HOME": "/tmp"},  # anvil keeps a cache under $HOME; the root fs is read-only
        "ports": ["127.0.0.1:8545:8545"],
        "networks": ["signer-net", "bot-net"],
        "healthcheck": _health(ANVIL_HEALTH),
    }
    return {
        "name": "owliabot",
        "services": {"signer": signer, "bot": bot, "bridge": bridge, "anvil": anvil},
        "networks": {"signer-net": {}, "bot-net": {}},
        "volumes": {"signer-data": {}, "signer-socket": {}, "bot-data": {}, "bridge-data": {}},
        "secrets": {name: {"file": f"./secrets/{name}"} for name in SECRETS},
    }


def render_compose(**kwargs: Any) -> str:
    return HEADER + yaml.safe_dump(compose_document(**kwargs), sort_keys=False, width=120)


def container_config(*, rpc_url: str = "http://anvil:8545", chain_id: int = 31337, dev: bool = True) -> str:
    """config.yaml as the containers see it (paths inside the containers)."""
    config = {
        "chains": [
            {"id": chain_id, "name": "anvil" if dev else f"chain-{chain_id}", "rpc_url": rpc_url, "dev": dev}
        ],
        "signer": {
            "home": f"{HOME_IN_CONTAINER}/signer",
            "socket": f"{SOCKET_DIR}/signer.sock",
            "allowed_uids": [BOT_UID, BRIDGE_UID],
        },
        # 0.0.0.0 inside the container (published on 127.0.0.1 only), so the gateway token is required
        "bot": {
            "gateway": {"host": "0.0.0.0", "port": GATEWAY_PORT},
            "channels": {"telegram": {"enabled": True, "allow_from": []}},
        },
    }
    return (
        "# OwliaBot config for docker compose (paths are inside the containers). No secrets here.\n"
        + yaml.safe_dump(config, sort_keys=False)
    )


@dataclass(frozen=True, slots=True)
class ComposeSetup:
    root: Path
    written: list[str]
    chowned: bool  # False: the printed `chown` commands must be run as root
    buildable: bool  # False: no checkout and no bundled Dockerfiles; the images must come from elsewhere


PACKAGES = ("bot", "signer", "policies", "skills_runtime", "companion_bridge")
BUNDLED_CONTEXT = "build"  # under the deployment directory, when there is no checkout


def source_checkout() -> Path | None:
    """The source tree this package runs from, if it has the Dockerfiles (a git checkout)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "docker" / "signer.Dockerfile").is_file() else None


def bundled_build_files() -> Path | None:
    """<prefix>/share/owliabot of a non-editable install: Dockerfiles, locks, pyproject.toml."""
    for prefix in (sys.prefix, site.getuserbase()):
        share = Path(prefix) / "share" / "owliabot"
        if (share / "docker" / "signer.Dockerfile").is_file() and (share / "pyproject.toml").is_file():
            return share
    return None


def export_build_context(target: Path) -> bool:
    """Lay out a build context from the installed package, as a checkout would have it.

    The packages are copied from where they are installed, so the images run exactly the code of
    this install. The directory holds no secret; it is replaced whole, so an upgrade re-exports it.
    Returns False when this install carries no Dockerfiles.
    """
    share = bundled_build_files()
    if share is None:
        return False
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        shutil.copytree(share, staging, dirs_exist_ok=True)
        for package in PACKAGES:
            spec = importlib.util.find_spec(package)
            if spec is None or spec.origin is None:
                raise FileNotFoundError(f"package {package} is not installed")
            shutil.copytree(
                Path(spec.origin).parent,
                staging / package,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            )
        staging.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return True


def write_compose_setup(
    root: Path, *, rpc_url: str = "http://anvil:8545", chain_id: int = 31337, chown: bool | None = None
) -> ComposeSetup:
    """Write compose file, config, secrets (0600) and the workspace; never overwrite a secret."""
    root = Path(root)
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    written: list[str] = []
    checkout = source_checkout()
    if checkout is not None:
        context: str | None = os.path.relpath(checkout, root)
    elif export_build_context(root / BUNDLED_CONTEXT):
        context = f"./{BUNDLED_CONTEXT}"
        written.append(f"{BUNDLED_CONTEXT}/")
    else:
        context = None
    for name, text in (
        ("docker-compose.yml", render_compose(build_context=context)),
        ("config.yaml", container_config(rpc_url=rpc_url, chain_id=chain_id, dev=chain_id == 31337)),
    ):
        path = root / name
        if not path.exists():
            path.write_text(text, encoding="utf-8")
            path.chmod(0o644)  # read by three container uids; holds no secret
            written.append(name)
    secrets_dir = ensure_private_dir(root / "secrets")
    generated = {
        "signer_passphrase": secrets.token_urlsafe(32) + "\n",
        "gateway_token": secrets.token_urlsafe(32) + "\n",
    }
    if not (secrets_dir / "bridge_tls_key").exists():
        generated["bridge_tls_cert"], generated["bridge_tls_key"] = self_signed_pair()
    for name in SECRETS:
        path = secrets_dir / name
        if not path.exists():
            write_private_file(path, generated.get(name, "").encode())
            if name in PUBLIC_FILES:
                path.chmod(0o644)  # a certificate: the bridge serves it, the bot verifies against it
            written.append(f"secrets/{name}")
    if not (root / "workspace").exists():  # once created it belongs to the bot's uid: leave it alone
        written += [f"workspace/{n}" for n in create_workspace(root / "workspace")]
    do_chown = os.geteuid() == 0 if chown is None else chown
    if do_chown:
        for uid, gid, path in chown_plan(root):
            os.chown(path, uid, gid, follow_symlinks=False)
    return ComposeSetup(root, written, do_chown, buildable=context is not None)


def self_signed_pair(days: int = 825) -> tuple[str, str]:
    """A P-256 certificate for the bridge (localhost, 127.0.0.1): TLS until you put a real one."""
    import datetime as dt  # lazy: 30 ms, 9776 KiB (6 imports)
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "owliabot-bridge")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.DNSName("bridge"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


def chown_plan(root: Path) -> list[tuple[int, int, Path]]:
    """Who must own what so each container can read its own secrets and nothing else's."""
    # secrets/ itself stays 0700 and the user's: docker bind-mounts each file as root, so the
    # directory is never traversed from inside a container.
    plan = [
        (uid, SOCKET_GID if uid == SIGNER_UID else uid, root / "secrets" / name)
        for name, (uid, _target) in SECRETS.items()
    ]
    workspace = root / "workspace"
    plan += [(BOT_UID, BOT_UID, workspace)] + [(BOT_UID, BOT_UID, p) for p in sorted(workspace.rglob("*"))]
    return plan


def chown_commands(root: Path) -> list[str]:
    return [f"sudo chown {uid}:{gid} {path}" for uid, gid, path in chown_plan(root)]
