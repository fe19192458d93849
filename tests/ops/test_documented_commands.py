"""The README's two commands work as written (a doc that drifts from the code fails CI), and `owlia up`
says what it does with ports instead of ignoring --port or talking to someone else's chain."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from tests.ops.doc_commands import ROOT, Lines, fenced_after as _fenced_after, isolated_env, section_blocks

README = (ROOT / "README.md").read_text(encoding="utf-8")


def fenced_after(heading: str, text: str = README) -> str:
    return _fenced_after(heading, text)


def test_the_run_command_in_the_readme_works_as_written(tmp_path) -> None:
    command = fenced_after("## Run it")
    assert command == "bash .ci/setup && .venv/bin/owlia up --demo"
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=isolated_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert (
        "Signed and sent" in out and "Waiting for your approval" in out and "Refused by your policy" in out
    ), out[-3000:]
    assert "swap 0.005 ETH" in out, out[-3000:]
    assert (tmp_path / ".owliabot" / "signer").is_dir()


def test_ci_runs_exactly_the_test_command_in_the_readme() -> None:
    """Running the suite from inside itself would recurse: CI runs it, and this holds CI to the README."""
    command = fenced_after("## Test it")
    assert command == "bash .ci/setup && .venv/bin/python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    setup, _, tests = command.partition(" && ")
    lines = [line.strip() for line in ci.splitlines()]
    ran = [line for line in lines if line.startswith(tests)]
    assert setup in lines and ran and lines.index(setup) < lines.index(ran[0]), (
        "the CI entry point must run the README's test command"
    )


def owned_port() -> socket.socket:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    return holder


def test_up_refuses_a_port_someone_else_listens_on(tmp_path) -> None:
    holder = owned_port()
    port = holder.getsockname()[1]
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "--home",
                str(tmp_path / "h"),
                "up",
                "--demo",
                "--port",
                str(port),
            ],
            cwd=ROOT,
            env=isolated_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.close()
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr and "Traceback" not in done.stderr


def test_up_records_a_port_that_differs_from_the_config_and_says_so(tmp_path) -> None:
    """`owlia init` writes the dev chain at 8545; `owlia up --port P` used to refuse it (and `chain dev`
    to ignore it): now the chain runs on P and config.yaml says P, where the signer and the bot read it."""
    from bot.devchain import free_port

    home = tmp_path / "h"
    assert (
        subprocess.run(
            [sys.executable, "-m", "bot.cli", "--home", str(home), "init"],
            cwd=ROOT,
            env=isolated_env(tmp_path),
            capture_output=True,
            timeout=120,
        ).returncode
        == 0
    )
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "up", "--port", str(port)],
        cwd=ROOT,
        env=isolated_env(tmp_path),
        input="/balance\n/quit\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (
        f"recorded --port {port}" in done.stdout and f"rpc_url is now http://127.0.0.1:{port}" in done.stdout
    )
    assert "(was http://127.0.0.1:8545)" in done.stdout
    import yaml

    text = (home / "config.yaml").read_text()
    [chain] = yaml.safe_load(text)["chains"]
    assert chain["rpc_url"] == f"http://127.0.0.1:{port}" and "swap_market" in chain
    assert "# OwliaBot configuration" in text  # the market recorded in the chain's entry, the comments kept


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
            f"  channels:\n    telegram: {{api_base: '{tg.url}', allow_from: ['42']}}\n"
        )
        os.chmod(home / "config.yaml", 0o600)
        env = {**isolated_env(tmp_path), "TELEGRAM_BOT_TOKEN": TOKEN}
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "--home", str(home), "up"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
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
    done = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Signed and sent" in done.stdout and "Waiting for your approval" in done.stdout
    assert "Refused by your policy" in done.stdout


def test_the_tier3_dev_setup_runs_as_written_on_a_fresh_home(tmp_path) -> None:
    """docs/tier3.md "Setting it up (dev chain)": the first block in a terminal of its own (it runs until
    /quit), the second in another, as written with `owlia` on PATH and a fresh HOME. The one change: 8545
    becomes a free port (this machine runs other chains), which also proves `owlia up --port` reaches
    config.yaml. Checked on chain: the transfer left the main account, not the session key, and the swap's
    tokens landed in the main account (the swap lane)."""
    from bot.devchain import free_port, rpc
    from tests.conftest import FRIEND

    guide = (ROOT / "docs" / "tier3.md").read_text(encoding="utf-8")
    stack_block, companion_block = section_blocks(guide, "## Setting it up (dev chain)")
    assert "owlia init" in stack_block.splitlines()[0] and "owlia up --tier3 --port 8545" in stack_block
    port = free_port()
    env = isolated_env(tmp_path)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    stack = subprocess.Popen(
        ["bash", "-e", "-c", stack_block.replace("8545", str(port))],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        lines = Lines(stack)
        lines.wait_for("console channel below", timeout=300)
        config = (tmp_path / ".owliabot" / "config.yaml").read_text()
        url = f"http://127.0.0.1:{port}"
        assert url in config and "delegation:" in config
        assert (tmp_path / ".owliabot" / "secrets" / "signer.token").exists()  # the bot's token
        friend_before = int(rpc(url, "eth_getBalance", [FRIEND, "latest"]), 16)
        done = subprocess.run(
            ["bash", "-e", "-c", companion_block],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-4000:]
        for said in (
            "main account 0x",
            "sent 1eth to",
            "is delegated to",
            "granted:",
            "left this period",
            "new session key",
            "revoked:",
            "frozen:",
        ):
            assert said in out, (said, out[-4000:])
        main = re.search(r"main account (0x[0-9a-fA-F]{40})", out).group(1)
        assert int(rpc(url, "eth_getBalance", [FRIEND, "latest"]), 16) - friend_before == 10**15
        import yaml

        manager = yaml.safe_load(config)["chains"][0]["delegation"]["manager"].lower()
        redeems = [
            tx
            for n in range(int(rpc(url, "eth_blockNumber"), 16) + 1)
            for tx in rpc(url, "eth_getBlockByNumber", [hex(n), True])["transactions"]
            if (tx.get("to") or "").lower() == manager and tx["from"].lower() != main.lower()
        ]
        # the /send and the /swap went through the grant: the session key redeemed both
        assert len(redeems) == 2, redeems
        tusd = next(
            t["address"]
            for t in yaml.safe_load(config)["chains"][0]["swap_market"]["tokens"]
            if t["symbol"] == "TUSD"
        )
        held = rpc(
            url, "eth_call", [{"to": tusd, "data": "0x70a08231" + "00" * 12 + main.lower()[2:]}, "latest"]
        )
        assert int(held, 16) > 14 * 10**18  # about 15 TUSD for 0.005 ETH, in the main account
        assert rpc(url, "eth_getCode", [main, "latest"]) in ("0x", "0x0")  # frozen: a plain account again
        stack.stdin.write("/quit\n")
        stack.stdin.flush()
        assert stack.wait(timeout=120) == 0, "".join(lines.seen[-40:])
    finally:
        if stack.poll() is None:
            os.killpg(stack.pid, 15)
            stack.wait(timeout=30)
