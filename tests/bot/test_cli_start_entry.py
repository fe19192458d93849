"""`owlia [--home PATH] start` goes to its work without typer (bot/cli/entry.py); every other command
line, `owlia start --help` and a misspelt option included, goes through typer's command tree as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, strategies as st

from bot.cli.entry import direct_home

ROOT = Path(__file__).resolve().parents[2]


def test_the_plain_start_command_lines_are_taken_directly() -> None:
    assert direct_home(["start"]) == ""
    assert direct_home(["--home", "/srv/owlia", "start"]) == "/srv/owlia"
    assert direct_home(["--home=/srv/owlia", "start"]) == "/srv/owlia"


def test_anything_else_is_left_to_typer() -> None:
    for argv in (
        [],
        ["--help"],
        ["start", "--help"],
        ["start", "extra"],
        ["--home", "start"],
        ["--home=", "start"],
        ["--home", "", "start"],
        ["--home", "--help", "start"],
        ["--hom", "x", "start"],
        ["--home", "a", "--home", "b", "start"],
        ["chat"],
        ["Start"],
        ["--home", "x", "chat"],
    ):
        assert direct_home(argv) is None, argv


@given(st.lists(st.text(max_size=12), max_size=4))
def test_only_start_as_the_last_word_is_ever_taken(argv: list[str]) -> None:
    home = direct_home(argv)
    if home is not None:
        assert argv[-1] == "start" and len(argv) <= 3
        assert home == "" or not home.startswith("-")


def _owlia(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys; from bot.cli.entry import main; sys.argv[0] = 'owlia'\n"
        "try:\n    main()\nfinally:\n"
        "    print('typer loaded' if 'typer' in sys.modules else 'typer not loaded', file=sys.stderr)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_a_bad_config_stops_the_direct_start_with_the_same_error_and_no_typer(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("bot:\n  gateway:\n    port: 99999\n")
    done = _owlia("--home", str(home), "start")
    assert done.returncode == 1
    assert f"error: {home / 'config.yaml'}: invalid configuration" in done.stderr
    assert "bot.gateway.port" in done.stderr and "Traceback" not in done.stderr
    assert "\x1b[" not in done.stderr  # not a terminal: no colour codes
    assert "typer not loaded" in done.stderr


def test_the_home_comes_from_owlia_home_when_not_given(tmp_path) -> None:
    home = tmp_path / "envhome"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("bot: [not, a, mapping]\n")
    done = _owlia("start", env={"OWLIA_HOME": str(home)})
    assert (
        done.returncode == 1
        and str(home / "config.yaml") in done.stderr
        and "typer not loaded" in done.stderr
    )


def test_start_help_still_goes_through_typer() -> None:
    done = _owlia("start", "--help")
    assert done.returncode == 0 and "Usage: owlia start" in done.stdout and "typer loaded" in done.stderr


def test_ctrl_c_before_the_bot_is_up_exits_130(tmp_path) -> None:
    """SIGINT while `owlia start` is still importing: no traceback, exit 130 as for Ctrl-C anywhere else."""
    import time

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    code = (
        "import os, signal, sys, bot.cli.start_run as s\n"
        "def slow(home):\n    os.kill(os.getpid(), signal.SIGINT)\n    import time; time.sleep(5)\n"
        "s.run_start = slow\nsys.argv[0] = 'owlia'\nfrom bot.cli.entry import main\nmain()"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, "--home", str(home), "start"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - started < 5
    assert done.returncode == 130 and done.stderr.strip() == "", done.stderr
