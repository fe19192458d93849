"""Tier 3 fixtures: an anvil (prague) of its own with the Delegation Framework deployed from npm
bytecode, a main account delegated by EIP-7702, and a signer whose config names the contracts."""

from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass

import coincurve
import pytest
import yaml

from bot.devchain import DevChain, free_port, rpc
from bot.devcontracts import deploy_delegation_framework
from companion_bridge.companion import tier3 as companion
from signer.keystore import unlock
from signer.tier2.session_keys import _aad
from signer.wire.txcodec import address_of
from tests.conftest import PASSPHRASE, SignerStack, wait_receipt

CHAIN_ID = 31337


@pytest.fixture(scope="module")
def chain3():
    chain = DevChain(port=free_port()).start()
    chain.contracts = deploy_delegation_framework(chain.url)
    yield chain
    chain.stop()


def send_raw(chain: DevChain, raw: bytes) -> dict:
    return wait_receipt(chain, rpc(chain.url, "eth_sendRawTransaction", ["0x" + raw.hex()]))


def nonce(chain: DevChain, address: str) -> int:
    return int(rpc(chain.url, "eth_getTransactionCount", [address, "pending"]), 16)


def fees() -> dict:
    return {"max_fee": 20 * 10**9, "max_priority_fee": 10**9}


def chain_time(chain: DevChain) -> int:
    return int(rpc(chain.url, "eth_getBlockByNumber", ["latest", False])["timestamp"], 16)


def fund(chain: DevChain, address: str, wei: int) -> None:
    sender = rpc(chain.url, "eth_accounts")[0]
    wait_receipt(
        chain, rpc(chain.url, "eth_sendTransaction", [{"from": sender, "to": address, "value": hex(wei)}])
    )


@dataclass
class MainAccount:
    key: coincurve.PrivateKey

    @property
    def address(self) -> str:
        return address_of(self.key)


def new_main_account(chain: DevChain, wei: int = 10**18) -> MainAccount:
    main = MainAccount(coincurve.PrivateKey(secrets.token_bytes(32)))
    fund(chain, main.address, wei)
    raw = companion.authorize(
        main.key,
        chain_id=CHAIN_ID,
        nonce=nonce(chain, main.address),
        implementation=chain.contracts["stateless_delegator"],
        **fees(),
    )
    assert send_raw(chain, raw)["status"] == "0x1"
    return main


def tier3_stack(make_stack, chain: DevChain, **kwargs) -> SignerStack:
    stack = make_stack(rpc_url=chain.url, **kwargs)
    config_path = stack.home / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["chains"][0]["delegation"] = chain.contracts
    config_path.write_text(yaml.safe_dump(config))
    return stack.start()


def steal_session_key(stack: SignerStack, key_id: str) -> coincurve.PrivateKey:
    """What an attacker who owns the host does: the keystore, the passphrase, the sealed row."""
    master = unlock(stack.paths.home, bytearray(PASSPHRASE))
    conn = sqlite3.connect(stack.paths.db)
    sealed = conn.execute("SELECT sealed FROM session_keys WHERE key_id=?", (key_id,)).fetchone()[0]
    conn.close()
    return coincurve.PrivateKey(bytes(master.open(sealed, aad=_aad(key_id))))


def mine_at(chain: DevChain, timestamp: int) -> None:
    rpc(chain.url, "evm_setNextBlockTimestamp", [hex(timestamp)])
    rpc(chain.url, "evm_mine", [])
