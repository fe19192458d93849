"""The README's two commands work as written (a doc that drifts from the code fails CI), and `owlia up`
says what it does with ports instead of ignoring --port or talking to someone else's chain."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def fenced_after(heading: str, text: str = README) -> str:
    """The first ```bash block after a heading, exactly as a reader copies it."""
    section = text.split(heading, 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip()


def isolated_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OWLIA_", "TELEGRAM_", "DISCORD_"))}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    return env


def test_the_run_command_in_the_readme_works_as_written(tmp_path) -> None:
    command = fenced_after("## Run it")
    assert command == "bash .ci/setup && .venv/bin/owlia up --demo"
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=isolated_env(tmp_path), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "SIGNED" in out and "PENDING APPROVAL" in out and "DENIED" in out, out[-3000:]
    assert "SIGNED: swap 0.005 ETH for at least" in out, out[-3000:]
    assert (tmp_path / ".owliabot" / "signer").is_dir()


def test_ci_runs_exactly_the_test_command_in_the_readme() -> None:
    """Running the suite from inside itself would recurse: CI runs it, and this holds CI to the README."""
    command = fenced_after("## Test it")
    assert command == "bash .ci/setup && .venv/bin/python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    setup, _, tests = command.partition(" && ")
    lines = [line.strip() for line in ci.splitlines()]
    ran = [line for line in lines if line.startswith(tests)]
    assert setup in lines and ran and lines.index(setup) < lines.index(ran[0]), \
        "the CI entry point must run the README's test command"


def owned_port() -> socket.socket:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    return holder


def test_up_refuses_a_port_someone_else_listens_on(tmp_path) -> None:
    holder = owned_port()
    port = holder.getsockname()[1]
    try:
        done = subprocess.run([sys.executable, "-m", "bot.cli", "--home", str(tmp_path / "h"), "up", "--demo",
                               "--port", str(port)], cwd=ROOT, env=isolated_env(tmp_path), capture_output=True,
                              text=True, timeout=120)
    finally:
        holder.close()
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr and "Traceback" not in done.stderr


def test_up_says_when_port_disagrees_with_an_existing_config(tmp_path) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("chains:\n  - {id: 31337, name: anvil, rpc_url: 'http://127.0.0.1:18545', "
                                      "dev: true}\n")
    os.chmod(home / "config.yaml", 0o600)
    done = subprocess.run([sys.executable, "-m", "bot.cli", "--home", str(home), "up", "--port", "28545"], cwd=ROOT,
                          env=isolated_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "--port 28545 differs from the dev chain" in done.stderr and "http://127.0.0.1:18545" in done.stderr


def test_up_runs_the_configured_chat_channels_too(tmp_path) -> None:
    """`owlia up` drove only the console; with a Telegram token it now runs Telegram as well."""
    import time

    from bot.devchain import free_port
    from tests.fakes.telegram_server import TOKEN, FakeTelegramServer

    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    with FakeTelegramServer() as tg:
        port = free_port()
        (home / "config.yaml").write_text(
            f"chains:\n  - {{id: 31337, name: anvil, rpc_url: 'http://127.0.0.1:{port}', dev: true}}\n"
            f"signer: {{}}\nbot:\n  gateway: {{enabled: false}}\n"
            f"  channels:\n    telegram: {{api_base: '{tg.url}', allow_from: ['42']}}\n")
        os.chmod(home / "config.yaml", 0o600)
        env = {**isolated_env(tmp_path), "TELEGRAM_BOT_TOKEN": TOKEN}
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "--home", str(home), "up"], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not tg.calls_of("getUpdates"):
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "Telegram was never polled"
                time.sleep(0.1)
            out, err = proc.communicate("/quit\n", timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err
    assert "bot: telegram running" in out


def test_the_laptop_path_in_self_hosting_works_as_written(tmp_path) -> None:
    """docs/self-hosting.md "C. One user on a laptop", run as written with `owlia` on PATH."""
    guide = (ROOT / "docs" / "self-hosting.md").read_text(encoding="utf-8")
    command = fenced_after("## C. One user on a laptop", guide)
    assert command == "owlia init && owlia up --demo"
    env = isolated_env(tmp_path)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "SIGNED" in done.stdout and "PENDING APPROVAL" in done.stdout and "DENIED" in done.stdout
