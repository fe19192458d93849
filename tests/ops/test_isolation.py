"""The two-user layout without containers: the signer as one uid, the bot as another.

Real processes under real uids (the test runs as root and drops privileges in each child): the
signer daemon serves its socket in a directory only the socket group may enter; the bot's uid
cannot read the signer home or its key files, reaches the socket only through that group, and a
third uid that has the group but is not in `allowed_uids` is refused by the signer itself.

The children run the system python3 (the same 3.11 ABI) with this checkout and the venv's
site-packages on PYTHONPATH: the venv's own interpreter lives under /root, which another uid
cannot enter, and that is exactly the kind of thing this test is about.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli import security_cmd
from signer.daemon import init_home
from signer.wire.settings import SignerPaths, load_signer_config
from tests.ops.conftest import requires_root

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")
SIGNER_UID, BOT_UID, OTHER_UID, SOCK_GID = 61001, 61002, 61003, 61100

pytestmark = [
    requires_root,
    pytest.mark.skipif(
        not SYSTEM_PYTHON.exists() or sys.version_info[:2] != (3, 11), reason="needs /usr/bin/python3 3.11"
    ),
]


def site_packages() -> str:
    return str(
        Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    )


def as_user(uid: int, gid: int, groups: list[int], args: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        "PYTHONPATH": f"{ROOT}:{site_packages()}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        [str(SYSTEM_PYTHON), *args],
        user=uid,
        group=gid,
        extra_groups=groups,
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def owned_dir(path: Path, uid: int, gid: int, mode: int) -> Path:
    path.mkdir()
    os.chown(path, uid, gid)
    path.chmod(mode)
    return path


def owned_file(path: Path, data: str, uid: int, gid: int, mode: int = 0o600) -> Path:
    path.write_text(data)
    os.chown(path, uid, gid)
    path.chmod(mode)
    return path


PROBE = """
import asyncio, json, os, sys
from pathlib import Path
from signer.wire.client import SignerClient, SignerError
socket_path, token_file, signer_home = sys.argv[1], sys.argv[2], Path(sys.argv[3])
out = {}
for name, target in (("list_home", signer_home), ("keystore", signer_home / "keystore.json"),
                     ("admin_token", signer_home / "admin.token"), ("db", signer_home / "signer.db")):
    try:
        os.listdir(target) if target.is_dir() else open(target, "rb").close()
        out[name] = "readable"
    except PermissionError:
        out[name] = "denied"
    except FileNotFoundError:
        out[name] = "missing"
async def status():
    token = Path(token_file).read_text().strip()
    async with SignerClient(Path(socket_path), token, timeout=10) as client:
        return await client.status()
def first_frame():
    # read what the signer says before sending anything: a refused peer is answered at accept
    import socket
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(socket_path)
        return json.loads(s.recv(65536).splitlines()[0])
if token_file == "none":
    pass
elif token_file == "-":
    try:
        out["status"] = "refused: " + first_frame()["error"]["message"]
    except OSError as exc:
        out["status"] = f"refused: cannot reach the signer ({type(exc).__name__})"
else:
    try:
        result = asyncio.run(status())
        out["status"] = "ok" if result.unlocked else "locked"
    except SignerError as exc:
        out["status"] = "refused: " + exc.message
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def two_users():
    open_root = Path(tempfile.mkdtemp(prefix="owlia-iso-"))
    open_root.chmod(0o755)
    signer_root = owned_dir(open_root / "signer", SIGNER_UID, SOCK_GID, 0o700)
    run_dir = owned_dir(open_root / "run", SIGNER_UID, SOCK_GID, 0o750)
    bot_root = owned_dir(open_root / "bot", BOT_UID, BOT_UID, 0o700)
    socket_path = run_dir / "signer.sock"
    config = {
        "chains": [{"id": 31337, "name": "anvil", "rpc_url": "http://127.0.0.1:9", "dev": True}],
        "signer": {
            "home": str(signer_root / "signer"),
            "socket": str(socket_path),
            "allowed_uids": [BOT_UID],
        },
    }
    owned_file(signer_root / "config.yaml", yaml.safe_dump(config), SIGNER_UID, SOCK_GID)
    owned_file(bot_root / "config.yaml", yaml.safe_dump(config), BOT_UID, BOT_UID)
    passfile = owned_file(signer_root / "passphrase", "two users, one key\n", SIGNER_UID, SOCK_GID)
    signer = [SIGNER_UID, SOCK_GID, []]
    # init in-process with a cheap scrypt (the CLI always uses the real cost), then hand it over
    paths = SignerPaths.from_config(signer_root, load_signer_config(signer_root))
    init_home(paths, bytearray(b"two users, one key"), scrypt_n=2**10)
    for item in [paths.home, *paths.home.iterdir()]:
        os.chown(item, SIGNER_UID, SOCK_GID)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": f"{ROOT}:{site_packages()}"}
    daemon = subprocess.Popen(
        [
            str(SYSTEM_PYTHON),
            "-m",
            "bot.cli",
            "--home",
            str(signer_root),
            "signer",
            "serve",
            "--passphrase-file",
            str(passfile),
        ],
        user=SIGNER_UID,
        group=SOCK_GID,
        extra_groups=[],
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not socket_path.exists():
            assert daemon.poll() is None, daemon.stderr.read()
            assert time.monotonic() < deadline, "the signer did not open its socket"
            time.sleep(0.05)
        issued = as_user(
            *signer,
            [
                "-m",
                "bot.cli",
                "--home",
                str(signer_root),
                "signer",
                "client",
                "add",
                "bot",
                "--passphrase-file",
                str(passfile),
            ],
        )
        assert issued.returncode == 0, issued.stderr
        secrets = owned_dir(bot_root / "secrets", BOT_UID, BOT_UID, 0o700)
        token = owned_file(secrets / "signer.token", issued.stdout.strip(), BOT_UID, BOT_UID)
        yield {
            "signer_home": signer_root / "signer",
            "socket": socket_path,
            "token": token,
            "bot_home": bot_root,
            "run_dir": run_dir,
        }
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(open_root, ignore_errors=True)


def probe(uid: int, gid: int, groups: list[int], env: dict, token: Path | str) -> dict:
    done = as_user(uid, gid, groups, ["-c", PROBE, str(env["socket"]), str(token), str(env["signer_home"])])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_socket_is_0660_in_the_socket_group(two_users):
    info = os.stat(two_users["socket"])
    assert oct(info.st_mode & 0o777) == "0o660" and info.st_uid == SIGNER_UID and info.st_gid == SOCK_GID


def test_bot_uid_with_the_group_signs_but_cannot_read_keys(two_users):
    seen = probe(BOT_UID, BOT_UID, [SOCK_GID], two_users, two_users["token"])
    assert seen == {
        "list_home": "denied",
        "keystore": "denied",
        "admin_token": "denied",
        "db": "denied",
        "status": "ok",
    }


def test_bot_uid_without_the_group_cannot_reach_the_socket(two_users):
    seen = probe(BOT_UID, BOT_UID, [], two_users, two_users["token"])
    # the kernel refuses connect() (EACCES on the 0750 dir / 0660 socket); the client reports it
    assert (
        seen["status"].startswith("refused: cannot reach the signer") and "PermissionError" in seen["status"]
    )
    assert seen["keystore"] == "denied"


def test_a_uid_not_in_allowed_uids_is_refused_by_the_signer(two_users):
    seen = probe(OTHER_UID, OTHER_UID, [SOCK_GID], two_users, "-")
    assert seen["status"] == "refused: this user may not use the signer"


def test_the_signer_itself_can_read_its_keys(two_users):
    """The probe is not blind: the signer's own uid gets 'readable' for the very same paths."""
    seen = probe(SIGNER_UID, SOCK_GID, [], two_users, "none")
    assert seen["keystore"] == seen["admin_token"] == seen["list_home"] == "readable"


def test_security_audit_agrees(two_users):
    env = {"OWLIA_HOME": str(two_users["bot_home"])}
    result = CliRunner().invoke(security_cmd.app, ["audit", "--json", "--bot-user", str(BOT_UID)], env=env)
    report = json.loads(result.output)
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["OWL-ISO-001"]["status"] == "pass", checks["OWL-ISO-001"]
    assert checks["OWL-SOCK-001"]["status"] == "pass", checks["OWL-SOCK-001"]
    assert checks["OWL-PERM-003"]["status"] == "pass", checks["OWL-PERM-003"]
    loosened = [
        two_users["signer_home"].parent,
        two_users["signer_home"],
        two_users["signer_home"] / "admin.token",
    ]
    modes = [p.stat().st_mode & 0o777 for p in loosened]
    try:
        for path in loosened:
            path.chmod(0o755 if path.is_dir() else 0o644)
        result = CliRunner().invoke(
            security_cmd.app, ["audit", "--json", "--bot-user", str(BOT_UID)], env=env
        )
        checks = {c["id"]: c for c in json.loads(result.output)["checks"]}
        assert checks["OWL-ISO-001"]["status"] == "fail" and result.exit_code == 1
        assert "can read" in checks["OWL-ISO-001"]["findings"][0]["message"]
    finally:
        for path, mode in zip(loosened, modes, strict=True):
            path.chmod(mode)


def test_audit_run_as_the_bot_user_sees_nothing_of_the_signer(two_users):
    """As the bot's own (unprivileged) user, the signer's files are invisible: isolation passes,
    and the checks that need the signer's files skip instead of guessing."""
    env_home = str(two_users["bot_home"])
    done = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "from bot.cli.security_cmd import app; app()", "audit", "--json"],
        user=BOT_UID,
        group=BOT_UID,
        extra_groups=[SOCK_GID],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": "/nonexistent",
            "PYTHONPATH": f"{ROOT}:{site_packages()}",
            "OWLIA_HOME": env_home,
        },
    )
    checks = {c["id"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["OWL-ISO-001"]["status"] == "pass", checks["OWL-ISO-001"]
    assert checks["OWL-SOCK-001"]["status"] == "pass", checks["OWL-SOCK-001"]
    for check_id in ("OWL-PERM-003", "OWL-POL-001", "OWL-KEY-001"):
        assert checks[check_id]["status"] == "skip", (check_id, checks[check_id]["findings"])
