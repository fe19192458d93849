"""systemd units for the container-free two-user setup: valid for systemd, and split as claimed."""

from __future__ import annotations

import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli import service_cmd
from bot.config import BotConfig
from bot.ops.systemd import ServiceLayout, bot_unit, signer_unit
from tests.ops.conftest import open_root, requires_root  # noqa: F401 - a fixture


def directives(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_units_pass_systemd_analyze_without_a_warning(tmp_path):
    layout = ServiceLayout()
    (tmp_path / "owliabot-signer.service").write_text(signer_unit(layout))
    (tmp_path / "owliabot.service").write_text(bot_unit(layout))
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", "./owliabot-signer.service", "./owliabot.service"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    (tmp_path / "broken.service").write_text(signer_unit(layout).replace("MemoryMax=256M", "MemoryMax=lots"))
    broken = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", "./broken.service"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Invalid memory limit" in broken.stderr  # the check above can fail


def test_two_users_one_shared_group():
    layout = ServiceLayout()
    signer, bot = directives(signer_unit(layout)), directives(bot_unit(layout))
    assert signer["User"] == ["owlia-signer"] and bot["User"] == ["owlia-bot"]
    assert signer["Group"] == ["owlia-sock"] and bot["SupplementaryGroups"] == ["owlia-sock"]
    assert signer["RuntimeDirectoryMode"] == ["0750"] and signer["StateDirectoryMode"] == ["0700"]
    assert bot["InaccessiblePaths"] == [f"-{layout.signer_home}"]
    assert "passphrase:" in signer["LoadCredential"][0] and "passphrase" not in bot_unit(layout)
    for unit in (signer, bot):
        assert unit["NoNewPrivileges"] == ["yes"] and unit["CapabilityBoundingSet"] == [""]
        assert (
            unit["ProtectSystem"] == ["strict"]
            and unit["PrivateTmp"] == ["yes"]
            and unit["UMask"] == ["0077"]
        )
        assert unit["Restart"] == ["on-failure"] and unit["MemoryMax"] and unit["TasksMax"]
    assert bot["Requires"] == ["owliabot-signer.service"]


def test_dry_run_prints_both_units():
    result = CliRunner().invoke(service_cmd.app, ["install", "--dry-run"])
    assert result.exit_code == 0
    assert "# /etc/systemd/system/owliabot-signer.service" in result.output
    assert "SupplementaryGroups=owlia-sock" in result.output


SYSTEM_PYTHON = Path("/usr/bin/python3")
ROOT = Path(__file__).resolve().parents[2]
needs_an_open_python = pytest.mark.skipif(
    not SYSTEM_PYTHON.exists() or sys.version_info[:2] != (3, 11), reason="needs /usr/bin/python3 3.11"
)


@pytest.fixture()
def open_python(open_root) -> Path:
    """A venv other users can run: the system python (same 3.11 ABI) with this checkout and the test venv's
    packages on its path (the test venv's own interpreter lives under /root, closed to them)."""
    venv = open_root / "venv"
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    ours = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "owliabot-test.pth").write_text(f"{ROOT}\n{ours}\n")
    for path in [venv, *venv.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o005 | (0o001 if path.is_dir() else 0))
    return venv / "bin" / "python"


def owlia_service(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "service", "install", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@requires_root
def test_install_refuses_an_interpreter_the_service_users_cannot_run_and_writes_nothing(tmp_path):
    """The test venv's python lives under /root (0700): a unit running it as nobody could never start."""
    units, signer_home, bot_home = tmp_path / "units", tmp_path / "signer", tmp_path / "bot"
    try:
        if subprocess.run([sys.executable, "-c", ""], user="nobody", capture_output=True).returncode == 0:
            pytest.skip("this interpreter is open to other users here")
    except PermissionError:
        pass  # closed to nobody: the case under test
    done = owlia_service(
        "--unit-dir",
        str(units),
        "--no-create-users",
        "--signer-user",
        "daemon",
        "--bot-user",
        "nobody",
        "--socket-group",
        "nogroup",
        "--signer-home",
        str(signer_home),
        "--bot-home",
        str(bot_home),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "could not start its service" in done.stderr
        and "--python /opt/owliabot/venv/bin/python" in done.stderr
    )
    assert "nothing was written" in done.stderr
    assert not units.exists() and not signer_home.exists() and not bot_home.exists()


@requires_root
def test_no_create_users_with_a_missing_user_writes_nothing(tmp_path, open_root):
    units, signer_home, bot_home = tmp_path / "units", tmp_path / "signer", tmp_path / "bot"
    for missing in (["--bot-user", "owlia-no-such-user"], ["--socket-group", "owlia-no-such-group"]):
        args = {"--signer-user": "daemon", "--bot-user": "nobody", "--socket-group": "nogroup"}
        args[missing[0]] = missing[1]
        done = owlia_service(
            "--unit-dir",
            str(units),
            "--no-create-users",
            "--signer-home",
            str(signer_home),
            "--bot-home",
            str(bot_home),
            *[x for kv in args.items() for x in kv],
        )
        assert (
            done.returncode == 1 and f"{missing[1]!r}" in done.stderr and "nothing was written" in done.stderr
        )
        assert not units.exists() and not signer_home.exists() and not bot_home.exists()


def test_a_user_yet_to_be_created_is_judged_by_the_other_bits(open_root):
    from bot.ops.service_preflight import others_problem

    closed = open_root / "closed"
    closed.mkdir(mode=0o700)
    (closed / "python").symlink_to(sys.executable)
    assert others_problem(str(closed / "python")) == f"{closed} is closed to other users"


@requires_root
@needs_an_open_python
def test_install_writes_units_and_private_homes(tmp_path, open_python):
    signer_home, bot_home = tmp_path / "signer", tmp_path / "bot"
    result = CliRunner().invoke(
        service_cmd.app,
        [
            "install",
            "--unit-dir",
            str(tmp_path / "units"),
            "--no-create-users",
            "--signer-user",
            "daemon",
            "--bot-user",
            "nobody",
            "--socket-group",
            "nogroup",
            "--signer-home",
            str(signer_home),
            "--bot-home",
            str(bot_home),
            "--python",
            str(open_python),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"ExecStart={open_python} -m bot.cli" in (tmp_path / "units" / "owliabot.service").read_text()
    assert (tmp_path / "units" / "owliabot.service").read_text().count("User=nobody") == 1
    for home, user in ((signer_home, "daemon"), (bot_home, "nobody")):
        info = home.stat()
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == pwd.getpwnam(user).pw_uid
        config = BotConfig.model_validate(yaml.safe_load((home / "config.yaml").read_text()))
        assert config.signer.allowed_uids == [pwd.getpwnam("nobody").pw_uid]
        assert config.signer.socket_group == "nogroup"
        assert stat.S_IMODE((home / "config.yaml").stat().st_mode) == 0o600
    assert "signer init" in result.output and "security audit --bot-user nobody" in result.output
    steps = result.output.splitlines()
    create = next(i for i, line in enumerate(steps) if "signer session-key create" in line)
    topup = next(i for i, line in enumerate(steps) if "signer session-key topup" in line)
    start = next(
        i for i, line in enumerate(steps) if "enable --now owliabot" in line and "signer" not in line
    )
    assert (
        create < topup < start
    )  # the bot starts with a funded session key, not a first transfer failing for gas
