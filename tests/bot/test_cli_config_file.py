"""A config.yaml that does not load stops `owlia chat`, `owlia pair`, `owlia cron` and `owlia up` alike
(bot/cli/config_file.py): the loader's words, naming the file and the field, on stderr and exit 1,
before anything is opened or run; the same line `owlia start` prints on its typer-free path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.app import app

BAD = "bot:\n  gateway:\n    port: 99999\n"
COMMANDS = [
    ("chat", "-m", "/help"),
    ("pair", "list"),
    ("pair", "approve", "ABCD2345"),
    ("pair", "revoke", "telegram:1"),
    ("cron", "list"),
    ("cron", "add", "--every", "1h", "--remind", "x"),
    ("up",),
    ("up", "--demo"),
]


@pytest.fixture
def bad_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(BAD)
    return home


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_bad_config_stops_the_command_with_the_loaders_words(bad_home: Path, argv: tuple[str, ...]) -> None:
    done = CliRunner().invoke(app, ["--home", str(bad_home), *argv])
    assert done.exit_code == 1, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)  # worded, not a traceback
    lines = done.stderr.splitlines()
    assert lines[0] == f"error: {bad_home / 'config.yaml'}: invalid configuration"
    assert any("bot.gateway.port" in line for line in lines)
    assert done.stdout == ""
    assert not (bad_home / "state").exists()  # stopped before opening any store


def test_the_typer_commands_and_the_direct_start_word_it_alike(bad_home: Path) -> None:
    typed = CliRunner().invoke(app, ["--home", str(bad_home), "cron", "list"])
    started = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(bad_home), "start"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == typed.exit_code == 1
    assert started.stderr == typed.stderr


def test_a_bad_chain_stops_owlia_up_before_anything_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("chains:\n  - id: 31337\n    rpc_url: 5\n")
    done = CliRunner().invoke(app, ["--home", str(home), "up"])
    assert done.exit_code == 1, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)  # worded, not a traceback
    assert done.stderr.startswith(f"error: {home / 'config.yaml'}")
    assert done.stdout == "" and sorted(p.name for p in home.iterdir()) == ["config.yaml"]
