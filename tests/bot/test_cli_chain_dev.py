"""`owlia chain dev` words its failures like every other command (policies.kernel.cli.fail): `error: ...`
on stderr and exit 1, with anvil never started on a port someone else holds; the port it runs on is
recorded in config.yaml, where the signer and the bot read it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import yaml

from bot.devchain import free_port, rpc


def owlia(home, *argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "--home", str(home), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


def test_a_port_in_use_is_a_worded_error_and_exit_1(tmp_path) -> None:
    home = tmp_path / "home"
    assert owlia(home, "init").returncode == 0
    with socket.socket() as held:  # our own listener on a port the system picked
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = owlia(home, "chain", "dev", "--port", str(port))
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr == f"error: port {port} on 127.0.0.1 is already in use (`ss -ltnp` shows by what): stop "
        "that process, or pick another port (`owlia up --port N` or `owlia chain dev --port N`: either records it "
        "in config.yaml)\n"
    )


def test_without_a_config_it_points_to_owlia_init_and_starts_nothing(tmp_path) -> None:
    home = tmp_path / "home"
    port = free_port()
    done = owlia(home, "chain", "dev", "--port", str(port))
    assert done.returncode == 1 and "run `owlia init` first" in done.stderr
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # no anvil was left behind


def test_the_port_given_is_recorded_in_config_yaml_with_its_comments(tmp_path) -> None:
    home = tmp_path / "home"
    assert owlia(home, "init").returncode == 0
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "--home",
            str(home),
            "chain",
            "dev",
            "--port",
            str(port),
            "--no-tier3",
            "--no-market",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        lines: list[str] = []
        while time.monotonic() < deadline and not any("funded dev accounts" in x for x in lines):
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "".join(lines) + proc.stderr.read()
            lines.append(line)
        out = "".join(lines)
        assert f"rpc_url is now http://127.0.0.1:{port} (was http://127.0.0.1:8545)" in out, out
        text = (home / "config.yaml").read_text()
        assert "# OwliaBot configuration" in text  # edited in place, the comments `owlia init` wrote kept
        [chain] = yaml.safe_load(text)["chains"]
        assert chain["rpc_url"] == f"http://127.0.0.1:{port}"
        assert rpc(chain["rpc_url"], "eth_chainId") == "0x7a69"
        assert oct(os.stat(home / "config.yaml").st_mode & 0o777) == "0o600"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_a_chain_that_is_not_a_local_dev_chain_is_never_rewritten(tmp_path) -> None:
    home = tmp_path / "home"
    assert owlia(home, "init").returncode == 0
    config = home / "config.yaml"
    config.write_text(config.read_text().replace("http://127.0.0.1:8545", "https://rpc.example.org/KEY"))
    before = config.read_text()
    port = free_port()
    done = owlia(home, "up", "--port", str(port))
    assert done.returncode == 1 and "not a dev chain on this machine" in done.stderr, done.stderr
    assert config.read_text() == before


def test_chain_fund_refuses_what_it_cannot_do_in_words(tmp_path) -> None:
    home = tmp_path / "home"
    assert owlia(home, "init").returncode == 0
    cases = {
        ("main", "1eth"): "no companion at",
        ("0x1234", "1eth"): "is not an address",
        ("0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "5usdc"): "only the chain's own coin",
        ("0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "1"): "has no unit",
    }
    for (to, amount), said in cases.items():
        done = owlia(home, "chain", "fund", to, amount)
        assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr, (
            to,
            done.stderr,
        )
    config = home / "config.yaml"
    config.write_text(config.read_text().replace("dev: true", "dev: false"))
    done = owlia(home, "chain", "fund", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "1eth")
    assert done.returncode == 1 and "is not a dev chain" in done.stderr


def test_chain_dev_deploys_the_swap_market_and_records_it(tmp_path) -> None:
    """The market's addresses land under chains[].swap_market, which the config still loads with."""
    import signal
    import time

    import yaml

    from bot.devchain import free_port, rpc
    from signer.wire.settings import load_signer_config

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    port = free_port()
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {"chains": [{"id": 31337, "name": "anvil", "rpc_url": f"http://127.0.0.1:{port}", "dev": True}]}
        )
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "--home",
            str(home),
            "chain",
            "dev",
            "--port",
            str(port),
            "--no-tier3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "funded dev accounts" in line or not line:
                break
        assert any("recorded under chains[31337].swap_market" in x for x in lines), lines
        market = yaml.safe_load((home / "config.yaml").read_text())["chains"][0]["swap_market"]
        assert [t["symbol"] for t in market["tokens"]] == ["TUSD", "TOWL"]
        code = rpc(f"http://127.0.0.1:{port}", "eth_getCode", [market["router"], "latest"])
        assert len(code) > 1000  # the real SwapRouter
        chain = load_signer_config(home).chains[0]
        assert chain.swap_market is not None and chain.swap_market.quoter == market["quoter"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
