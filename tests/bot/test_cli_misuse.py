"""`owlia` used the way a new user gets it wrong, as the real process: every case ends with a worded
`error: ...` that says what to do, a non-zero exit and no traceback, and leaves nothing half-written.

Ctrl-C at a prompt exits 130 (tests/bot/test_cli_start_entry.py covers `owlia start`); end of input at
a prompt says how to answer; a home, config.yaml or token that is the wrong kind of file is named.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_SKILL = ROOT / "skills_runtime" / "examples" / "gas_tracker"
FRIEND = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
T = TypeVar("T")


def owlia(home: Path, *argv: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *argv],
        stdin=stdin,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def worded(done: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 1, no traceback, and stderr's `error:` line holds every one of `words`."""
    assert done.returncode == 1, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    said = done.stderr[done.stderr.find("error: ") :]  # the error, with the lines that go with it
    assert "error: " in done.stderr and all(w in said for w in words), done.stderr[-2000:]


def signalled(
    argv: list[str], env: dict[str, str], ready: Callable[[subprocess.Popen], T], sig: int, *, stdin: int
) -> tuple[subprocess.Popen, T, str]:
    """Run `owlia *argv`, wait with `ready` (what it returns is passed on), send `sig`; the ended process,
    `ready`'s value and stderr. The process is never left running."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", *argv],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        seen = ready(proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, seen, err


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    assert owlia(home, "init").returncode == 0
    return home


# ---- prompts: end of input and Ctrl-C ----------------------------------------------------------


@pytest.mark.parametrize("argv", [("auth", "setup"), ("skill", "install", str(EXAMPLE_SKILL))], ids=" ".join)
def test_end_of_input_at_a_prompt_says_how_to_answer(home: Path, argv: tuple[str, ...]) -> None:
    """stdin closed: click's bare "Aborted!" told nobody that the answer can come from an option."""
    done = owlia(home, *argv)
    worded(done, "end of input at a prompt", "--help")
    assert "Aborted!" not in done.stderr
    assert not (home / "skills" / "gas_tracker").exists()


def _reading(pid: int) -> bool:
    """The process is blocked in read(2) (x86-64 syscall 0), as a prompt waits for its answer: keys typed
    earlier could be flushed by the prompt's own terminal setup."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] == "0"
    except (OSError, IndexError):
        return False


def on_a_terminal(home: Path, argv: list[str], wait_for: bytes, keys: bytes) -> tuple[int, str]:
    """Run `owlia ARGV` on a pseudo-terminal, type `keys` once `wait_for` is on the screen: (exit code, screen)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, its terminal the pty
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "bot.cli", "--home", str(home), *argv], env)
    screen, sent, deadline = b"", False, time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # the child closed the terminal: it has ended
                    break
                if not chunk:
                    break
                screen += chunk
            if not sent and wait_for in screen and _reading(pid):
                os.write(fd, keys)  # typed once the prompt is out and the command waits in read()
                sent = True
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert sent, screen.decode(errors="replace")
    return os.waitstatus_to_exitcode(status), screen.decode(errors="replace")


@pytest.mark.parametrize(
    ("argv", "prompt"),
    [(["auth", "setup"], b"Provider"), (["skill", "install", str(EXAMPLE_SKILL)], b"[y/N]")],
    ids=str,
)
def test_ctrl_c_at_a_prompt_exits_130(home: Path, argv: list[str], prompt: bytes) -> None:
    """Ctrl-C at a click prompt was "Aborted!" and exit 1, the exit for end of input; now 130 as anywhere."""
    code, screen = on_a_terminal(home, argv, prompt, b"\x03")
    assert code == 130, screen
    assert "Traceback" not in screen and "Aborted!" not in screen
    assert not (home / "skills" / "gas_tracker").exists() and not (home / "auth.json").exists()


# ---- the home and config.yaml -----------------------------------------------------------------


@pytest.mark.parametrize("argv", [("init",), ("up",)], ids=" ".join)
def test_a_home_that_is_a_file_is_named(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """`--home` naming a file: init and up printed FileExistsError's traceback."""
    where = tmp_path / "notes.txt"
    where.write_text("mine\n")
    worded(owlia(where, *argv), f"cannot use {where} as a private directory", "--home")
    assert where.read_text() == "mine\n"


@pytest.mark.parametrize(
    "argv", [("start",), ("chat", "-m", "/help"), ("pair", "list"), ("init",)], ids=" ".join
)
def test_a_config_yaml_that_is_a_directory_is_named(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """IsADirectoryError's traceback before; now the file and what to do with it."""
    home = tmp_path / "home"
    (home / "config.yaml").mkdir(parents=True)
    home.chmod(0o700)
    worded(owlia(home, *argv), f"{home / 'config.yaml'}", "directory", "move it away")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the command as another user (setpriv)")
@pytest.mark.parametrize("argv", [("start",), ("chat", "-m", "/help"), ("init",)], ids=" ".join)
def test_a_home_of_another_user_is_named(argv: tuple[str, ...]) -> None:
    """A home this user can search but not read (config.yaml 0600, another owner): start and chat printed
    PermissionError's traceback, init PermissionProblem's."""
    import shutil
    import tempfile

    parent = Path(
        tempfile.mkdtemp(dir="/tmp")
    )  # pytest's own tmp_path is 0700: the other user could not reach it
    try:
        parent.chmod(0o755)
        home = parent / "home"
        assert owlia(home, "init").returncode == 0
        home.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-m",
                "bot.cli",
                "--home",
                str(home),
                *argv,
            ],
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        worded(done, str(home), "run as the user who owns")
    finally:
        shutil.rmtree(parent)


def test_an_unknown_top_level_key_is_refused(home: Path) -> None:
    """A typo such as `chians:` was silently ignored, so the defaults ran instead of what was written."""
    config = home / "config.yaml"
    config.write_text(config.read_text() + 'chians:\n  - {id: 1, name: mainnet, rpc_url: "https://x"}\n')
    for argv in (("pair", "list"), ("chat", "-m", "/help"), ("start",)):
        worded(owlia(home, *argv), "chians", "Extra inputs are not permitted")


# ---- the signer token -------------------------------------------------------------------------


def test_a_token_path_that_is_a_directory_is_named(home: Path) -> None:
    """secrets/signer.token a directory: `owlia sign send` printed IsADirectoryError's traceback."""
    (home / "secrets" / "signer.token").mkdir(mode=0o700)
    for argv in (
        ("sign", "send", "--to", FRIEND, "--value", "1wei"),
        ("sign", "send", "--to", FRIEND, "--value", "1wei", "--reason", "x y"),
    ):  # typer-free and typer
        worded(
            owlia(home, *argv),
            f"{home / 'secrets' / 'signer.token'} is not a file",
            "owlia signer client add",
        )


def test_an_auth_json_that_is_a_directory_is_named(home: Path) -> None:
    """`owlia auth status` printed os.fdopen's IsADirectoryError traceback."""
    (home / "auth.json").mkdir(mode=0o700)
    for argv in (("auth", "status"), ("auth", "logout", "--all")):
        worded(owlia(home, *argv), f"{home / 'auth.json'} is not a regular file", "move it aside")


@pytest.mark.parametrize(
    "argv",
    [
        ("up", "--port", "70000"),
        ("up", "--port", "0"),
        ("chain", "dev", "--port", "-1"),
        ("bridge", "serve", "--port", "99999"),
    ],
    ids=" ".join,
)
def test_a_port_out_of_range_is_a_usage_error_before_anything_is_written(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    """`owlia up --port 70000` wrote config.yaml with that port, then printed OverflowError's traceback;
    `owlia bridge serve --port 99999` the same traceback from bind()."""
    home = tmp_path / "new-home"
    done = owlia(home, *argv)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "Invalid value for '--port'" in done.stderr
    assert not home.exists()


@pytest.mark.parametrize(
    "argv", [("up", "--port", "28613"), ("chain", "dev", "--port", "28614", "--no-tier3")], ids=" ".join
)
def test_ctrl_c_while_the_dev_chain_starts_stops_it(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """anvil runs in its own session (a terminal's Ctrl-C does not reach it); Ctrl-C while `owlia up` or
    `owlia chain dev` waited for it to answer left it running, holding the port, after owlia had exited."""
    import signal

    pidfile = tmp_path / "chain.pid"
    slow = (
        tmp_path / "slow-anvil"
    )  # a chain that never answers: the command is still waiting when Ctrl-C comes
    slow.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 60\n")
    slow.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}, "OWLIA_ANVIL": str(slow)}
    if argv[0] == "chain":  # `owlia chain dev` runs on a home `owlia init` made (`owlia up` makes its own)
        subprocess.run(
            [sys.executable, "-m", "bot.cli", "--home", str(tmp_path / "home"), "init"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=True,
            timeout=60,
        )

    def started(proc: subprocess.Popen) -> int:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return int(pidfile.read_text())

    proc, chain_pid, err = signalled(
        ["--home", str(tmp_path / "home"), *argv], env, started, signal.SIGINT, stdin=subprocess.DEVNULL
    )
    gone = False
    for _ in range(100):
        try:
            os.kill(chain_pid, 0)
        except ProcessLookupError:
            gone = True
            break
        time.sleep(0.05)
    if not gone:
        os.kill(chain_pid, signal.SIGKILL)
    assert gone, "the dev chain outlived the command"
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]


@pytest.mark.parametrize("command", ["/nonexistent/mcp-server", "/tmp"])
def test_mcp_add_refuses_a_command_that_is_not_an_executable_here(home: Path, command: str) -> None:
    """Accepted before; `owlia mcp approve` then failed with the sandbox launcher's traceback as the reason."""
    worded(
        owlia(home, "mcp", "add", "srv", "--", command), f"{command} is not an executable file", "command -v"
    )
    listed = owlia(home, "mcp", "list")
    assert listed.returncode == 0 and "srv" not in listed.stdout


def test_cron_run_says_when_no_bot_will_pick_it_up(home: Path) -> None:
    """`owlia cron run` said "the running bot picks it up within seconds" with no bot running; `--wait N`
    then waited the N seconds for nothing."""
    import json

    assert owlia(home, "cron", "add", "--every", "1h", "--remind", "x").returncode == 0
    job = json.loads(owlia(home, "cron", "list").stdout)[0]["id"]
    queued = owlia(home, "cron", "run", job)
    assert queued.returncode == 0 and "no bot is running" in queued.stderr and "owlia start" in queued.stderr
    started = time.monotonic()
    worded(owlia(home, "cron", "run", job, "--wait", "30"), "start the bot")
    assert time.monotonic() - started < 20
    for argv in (("cron", "run", job, "--wait", "-1"), ("cron", "history", "-n", "0")):
        done = owlia(home, *argv)
        assert done.returncode == 2 and "Invalid value" in done.stderr, done.stderr


def _processes_naming(path: Path) -> list[int]:
    """Pids on this machine whose command line names `path` (a home only this test uses)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if str(path).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.chain
def test_sigterm_stops_the_whole_up_stack(tmp_path: Path) -> None:
    """SIGTERM (a service manager's stop, `kill`, `timeout`) ended `owlia up` at once, without its
    cleanup: anvil, the signer and the bot went on running, holding the chain's port and the socket."""
    import signal
    import socket

    from bot.devchain import free_port

    port, home = free_port(), tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OWLIA_")}

    def stack_up(proc: subprocess.Popen) -> list[int]:
        said = ""
        while "console channel below" not in said:  # the whole stack is up
            line = proc.stdout.readline()
            assert line, (said, proc.stderr.read()[-2000:])
            said += line
        return [pid for pid in _processes_naming(home) if pid != proc.pid]

    _, started, err = signalled(
        ["--home", str(home), "up", "--port", str(port)], env, stack_up, signal.SIGTERM, stdin=subprocess.PIPE
    )
    assert started, "the signer (its command line names the home) was running"
    assert "Traceback" not in err, err[-2000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            chain_up = probe.connect_ex(("127.0.0.1", port)) == 0
        left = _processes_naming(home)
        if not chain_up and not left:
            break
        time.sleep(0.1)
    assert not chain_up, "the dev chain still holds its port"
    assert left == [], "a process started for this home outlived `owlia up`"


def test_owlia_up_puts_the_process_sigterm_handler_back_when_it_is_done() -> None:
    """`owlia up` turns SIGTERM into Ctrl-C while it runs, and only then: called in a longer-lived
    process (a test runner, an embedding program), that process's own handler comes back."""
    import signal

    from bot.cli.up_cmd import _stop_on_sigterm

    before = signal.getsignal(signal.SIGTERM)
    restore = _stop_on_sigterm()
    assert signal.getsignal(signal.SIGTERM) is not before
    restore()
    assert signal.getsignal(signal.SIGTERM) is before
