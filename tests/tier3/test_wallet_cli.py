"""`owlia chain dev` and `owlia wallet` end to end: real processes, real anvil, checked on chain."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
import yaml

from bot.devchain import DEV_CHAIN_ID, free_port, rpc
from policies.kernel.files import write_private_file
from tests.conftest import FRIEND, balance, wait_receipt
from tests.tier3.conftest import fund, tier3_stack
from tests.tier3.test_stolen_host import CENT, send

pytestmark = [pytest.mark.chain, pytest.mark.slow]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_chain_dev_deploys_the_contracts_and_records_them_in_the_config(tmp_path, stop):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    port = free_port()
    write_private_file(
        home / "config.yaml",
        yaml.safe_dump(
            {
                "chains": [
                    {"id": DEV_CHAIN_ID, "name": "anvil", "rpc_url": f"http://127.0.0.1:{port}", "dev": True}
                ]
            }
        ).encode(),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "--home", str(home), "chain", "dev", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "recorded under" in line or proc.poll() is not None:
                break
        assert any("recorded under" in x for x in lines), lines + [proc.stderr.read() if proc.poll() else ""]
        section = yaml.safe_load((home / "config.yaml").read_text())["chains"][0]["delegation"]
        assert oct((home / "config.yaml").stat().st_mode & 0o777) == "0o600"
        for address in (section["manager"], section["stateless_delegator"], *section["enforcers"].values()):
            code = rpc(f"http://127.0.0.1:{port}", "eth_getCode", [address, "latest"])
            assert len(code) > 2 and section["code_hashes"][address].startswith("0x")
        assert set(section["enforcers"]) >= {
            "ValueLteEnforcer",
            "NativeTokenPeriodTransferEnforcer",
            "AllowedTargetsEnforcer",
            "TimestampEnforcer",
        }
    finally:
        proc.send_signal(stop)
        proc.wait(timeout=20)
    with pytest.raises(OSError):  # anvil went with it
        rpc(f"http://127.0.0.1:{port}", "eth_chainId", timeout=1)


def test_wallet_cli_authorize_grant_status_rotate_revoke_freeze(make_stack, chain3, tmp_path):
    stack = tier3_stack(make_stack, chain3)
    passfile = tmp_path / "main.pass"
    write_private_file(passfile, b"main key passphrase for tests")
    companion_dir = tmp_path / "companion"

    def owlia(*args: str) -> subprocess.CompletedProcess:
        return stack.owlia(*args)

    def wallet(*args: str) -> subprocess.CompletedProcess:
        return owlia(
            "wallet", *args, "--dir", str(companion_dir), "--passphrase-file", str(passfile), "--yes"
        )

    made = owlia(
        "companion",
        "init",
        "--dir",
        str(companion_dir),
        "--passphrase-file",
        str(passfile),
        "--scrypt-n",
        "1024",
    )
    assert made.returncode == 0, made.stderr
    main = json.loads((companion_dir / "companion.json").read_text())["main_address"]
    fund(chain3, main, 10**18)
    key = stack.funded_session_key()

    done = wallet("authorize")
    assert done.returncode == 0, done.stdout + done.stderr
    code = rpc(chain3.url, "eth_getCode", [main, "latest"])
    assert code == "0xef0100" + chain3.contracts["stateless_delegator"][2:]

    granted = wallet("grant", "--days", "2")
    assert granted.returncode == 0, granted.stdout + granted.stderr
    assert (
        "this key may send at most 0.01 ETH per transaction, 0.05 ETH per day and 0.1 ETH in all, only to "
        "dev-friend" in granted.stdout
    )
    shown = owlia("wallet", "status", "--dir", str(companion_dir))
    assert shown.returncode == 0 and "left this period: 0.05 ETH" in shown.stdout, shown.stdout + shown.stderr
    assert key["address"] in shown.stdout

    token = stack.client_token("bot")
    friend0 = balance(chain3, FRIEND)
    ok = send(stack, token, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1"
    assert balance(chain3, FRIEND) - friend0 == CENT
    shown = owlia("wallet", "status", "--dir", str(companion_dir), "--json")
    lanes = json.loads(shown.stdout)["grants"][0]["lanes"]
    assert lanes[0]["left_in_period"] == str(4 * CENT)

    # A second grant while one is live is refused (never two live grants).
    again = wallet("grant")
    assert again.returncode == 1 and "already live" in again.stdout + again.stderr

    rotated = wallet("rotate", "--days", "2")
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    status = json.loads(owlia("wallet", "status", "--dir", str(companion_dir), "--json").stdout)
    assert len(status["grants"]) == 1 and status["grants"][0]["delegate"] != key["address"]
    ok = send(stack, token, FRIEND, CENT)
    assert ok["status"] == "signed" and wait_receipt(chain3, ok["tx_hash"])["status"] == "0x1", ok

    revoked = wallet("revoke")
    assert revoked.returncode == 0 and "dead on chain" in revoked.stdout, revoked.stdout + revoked.stderr
    assert "the signer dropped grant" in revoked.stdout
    denied = send(stack, token, FRIEND, CENT)
    assert denied["status"] != "signed" and denied["rule_id"] == "tier3.no_grant"

    frozen = wallet("freeze")
    assert frozen.returncode == 0, frozen.stdout + frozen.stderr
    assert rpc(chain3.url, "eth_getCode", [main, "latest"]) in ("0x", "0x0")
    assert "FROZEN" in owlia("wallet", "status", "--dir", str(companion_dir)).stdout


def test_wallet_pin_records_canonical_addresses_with_their_code_hashes(make_stack, tmp_path):
    from bot.devchain import DevChain
    from bot.devcontracts import CANONICAL_V1_3_0
    from policies.kernel.keccak import keccak256

    with DevChain(port=free_port()) as chain:
        stack = make_stack(rpc_url=chain.url)
        missing = stack.owlia("wallet", "pin", "--chain", str(DEV_CHAIN_ID), "--yes")
        assert missing.returncode == 1 and "not deployed here" in missing.stdout + missing.stderr
        addresses = [
            CANONICAL_V1_3_0["manager"],
            CANONICAL_V1_3_0["stateless_delegator"],
            *CANONICAL_V1_3_0["enforcers"].values(),
        ]
        for i, address in enumerate(addresses):  # stand-in code: a real chain has the deployed contracts here
            rpc(chain.url, "anvil_setCode", [address, "0x60" + f"{i:02x}" + "5f5260205ff3"])
        pinned = stack.owlia("wallet", "pin", "--chain", str(DEV_CHAIN_ID), "--yes")
        assert pinned.returncode == 0, pinned.stdout + pinned.stderr
        section = yaml.safe_load((stack.home / "config.yaml").read_text())["chains"][0]["delegation"]
        assert section["manager"] == CANONICAL_V1_3_0["manager"]
        for i, address in enumerate(addresses):
            code = bytes.fromhex("60" + f"{i:02x}" + "5f5260205ff3")
            assert section["code_hashes"][address] == "0x" + keccak256(code).hex()
