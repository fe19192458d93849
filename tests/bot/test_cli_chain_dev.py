"""`owlia chain dev` words its failures like every other command (policies.kernel.cli.fail): `error: ...`
on stderr and exit 1, with anvil never started on a port someone else holds."""

from __future__ import annotations

import socket
import subprocess
import sys


def test_a_port_in_use_is_a_worded_error_and_exit_1(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with socket.socket() as held:  # our own listener on a port the system picked
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "bot.cli", "--home", str(home), "chain", "dev",
                               "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"error: port {port} on 127.0.0.1 is already in use (`ss -ltnp` shows by what): stop " \
        "that process, or pick another port (`owlia up --port N` on a new home, or edit the dev chain's rpc_url " \
        "in config.yaml)\n"


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
    (home / "config.yaml").write_text(yaml.safe_dump({"chains": [
        {"id": 31337, "name": "anvil", "rpc_url": f"http://127.0.0.1:{port}", "dev": True}]}))
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "--home", str(home), "chain", "dev", "--port", str(port),
                             "--no-tier3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
