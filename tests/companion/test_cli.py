"""The commands a user types: `owlia bridge serve` as a real process, `owlia companion ...` end to end."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import subprocess
import sys
import time
import urllib.request

import pytest
from typer.testing import CliRunner

from bot.devchain import free_port
from companion_bridge.companion import cli as companion_cmd
from policies.kernel.addresses import to_checksum
from policies.kernel.files import write_private_file
from signer.wire.client import SignerClient
from signer.wire.protocol import Scope
from tests.companion.conftest import MAIN_PASS, fund, wait_status
from tests.conftest import FRIEND, as_json, balance

pytestmark = [pytest.mark.chain]


def start_bridge(stack, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "OWLIA_HOME": str(stack.home),
        "OWLIA_BRIDGE_TOKEN": stack.client_token("bridge", Scope.BRIDGE),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", "from companion_bridge.cli import app; app()", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=1) as resp:  # noqa: S310
                if resp.status == 200:
                    return proc
        except OSError:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    raise AssertionError("bridge did not start")


def test_companion_cli_pairs_and_approves_through_a_bridge_process(stack, anvil, tmp_path):
    port = free_port()
    bridge = start_bridge(stack, port)
    runner = CliRunner()
    env = {"OWLIA_HOME": str(stack.home)}
    cdir = tmp_path / "phone"
    passfile = tmp_path / "pass"
    write_private_file(passfile, MAIN_PASS)
    try:
        out = runner.invoke(
            companion_cmd.app,
            [
                "init",
                "--dir",
                str(cdir),
                "--passphrase-file",
                str(passfile),
                "--name",
                "phone",
                "--scrypt-n",
                "1024",
            ],
            env=env,
        )
        assert out.exit_code == 0, out.output
        main = re.search(r"main account (0x[0-9a-fA-F]{40})", out.output).group(1)
        assert stat.S_IMODE((cdir / "keystore.json").stat().st_mode) == 0o600
        assert stat.S_IMODE((cdir / "device.key").stat().st_mode) == 0o600
        fund(anvil, main, 10**18)

        png = tmp_path / "pair.png"
        out = runner.invoke(
            companion_cmd.app, ["pair", "--bridge", f"http://127.0.0.1:{port}", "--png", str(png)], env=env
        )
        assert out.exit_code == 0, out.output
        assert png.read_bytes().startswith(b"\x89PNG") and stat.S_IMODE(png.stat().st_mode) == 0o600
        uri = re.search(r"link '([^']+)'", out.output).group(1)
        out = runner.invoke(companion_cmd.app, ["link", uri, "--dir", str(cdir)], env=env)
        assert out.exit_code == 0, out.output
        out = runner.invoke(companion_cmd.app, ["list"], env=env)
        assert '"name": "phone"' in out.output and '"active": true' in out.output

        bot = stack.client_token("bot")
        before = balance(anvil, FRIEND)
        pending = asyncio.run(_sign(stack, bot, 2 * 10**16))
        out = runner.invoke(
            companion_cmd.app,
            ["run", "--dir", str(cdir), "--once", "--answers", "approve", "--passphrase-file", str(passfile)],
            env=env,
        )
        assert out.exit_code == 0, out.output
        assert to_checksum(FRIEND) in out.output and "dev-friend" in out.output and "0.02 ETH" in out.output
        assert "approve: signed 0x" in out.output
        asyncio.run(wait_status(stack, bot, pending["request_id"], {"confirmed"}))
        assert balance(anvil, FRIEND) - before == 2 * 10**16

        out = runner.invoke(companion_cmd.app, ["link", uri, "--dir", str(cdir)], env=env)
        assert out.exit_code != 0 and "unknown, used or expired" in out.output  # the code was single use
        device_id = re.search(
            r'"device_id": "(dev_[0-9a-f]{16})"', runner.invoke(companion_cmd.app, ["list"], env=env).output
        ).group(1)
        out = runner.invoke(companion_cmd.app, ["revoke", device_id], env=env)
        assert '"active": false' in out.output
        out = runner.invoke(
            companion_cmd.app, ["run", "--dir", str(cdir), "--once", "--answers", "deny"], env=env
        )
        assert out.exit_code != 0  # a revoked device cannot even log in
    finally:
        bridge.terminate()
        bridge.wait(timeout=15)


def test_bridge_refuses_a_non_loopback_address_without_tls(tmp_path):
    env = {**os.environ, "OWLIA_HOME": str(tmp_path), "OWLIA_BRIDGE_TOKEN": "x" * 20}
    out = subprocess.run(
        [sys.executable, "-c", "from companion_bridge.cli import app; app()", "serve", "--host", "0.0.0.0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and "needs --tls-cert" in out.stderr


async def _sign(stack, token: str, value: int) -> dict:
    async with SignerClient(stack.socket, token) as client:
        return as_json(await client.sign({"chain_id": 31337, "to": FRIEND, "value": str(value)}))
