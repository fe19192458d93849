"""Deploy the MetaMask Delegation Framework (Tier 3) on a local anvil chain.

The creation bytecode comes from the npm package `@metamask/delegation-abis` (package.json, installed
by .ci/setup); nothing is compiled here. The result is what `chains[].delegation` in config.yaml
holds: every contract's address and the keccak-256 of its deployed code, which the signer checks
(eth_getCode) before it first relies on a contract.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import yaml

from bot.config_text import set_chain_key
from bot.devchain import PROJECT_ROOT, DevChainError, rpc
from policies.kernel.files import write_private_file
from policies.kernel.keccak import keccak256
from signer.wire.grants import ENFORCERS

BYTECODE_DIR = PROJECT_ROOT / "node_modules" / "@metamask" / "delegation-abis" / "dist" / "bytecode"
_BYTECODE = re.compile(r'const bytecode = "0x([0-9a-fA-F]+)"')


def creation_code(name: str, directory: Path = BYTECODE_DIR) -> bytes:
    path = directory / f"{name}.cjs"
    if not path.is_file():
        raise DevChainError(
            f"{path} is missing: run `bash .ci/setup` (npm install @metamask/delegation-abis)"
        )
    match = _BYTECODE.search(path.read_text())
    if match is None:
        raise DevChainError(f"{path} holds no creation bytecode")
    return bytes.fromhex(match.group(1))


def _word_address(address: str) -> bytes:
    return b"\x00" * 12 + bytes.fromhex(address[2:])


def _deploy(url: str, sender: str, code: bytes) -> str:
    tx_hash = rpc(
        url, "eth_sendTransaction", [{"from": sender, "data": "0x" + code.hex(), "gas": hex(12_000_000)}]
    )
    receipt = None
    for _ in range(400):
        receipt = rpc(url, "eth_getTransactionReceipt", [tx_hash])
        if receipt:
            break
        time.sleep(0.025)
    if not receipt or int(receipt["status"], 16) != 1:
        raise DevChainError(f"deploying a delegation contract failed (tx {tx_hash})")
    return receipt["contractAddress"].lower()


def code_hash(url: str, address: str) -> str:
    code = rpc(url, "eth_getCode", [address, "latest"])
    return "0x" + keccak256(bytes.fromhex(code[2:])).hex()


def deploy_delegation_framework(url: str) -> dict:
    """Deploy DelegationManager, EIP7702StatelessDeleGator (with an EntryPoint) and the enforcers
    Tier 3 uses, from anvil's first unlocked account; return the config section for the chain."""
    sender = rpc(url, "eth_accounts")[0].lower()
    manager = _deploy(url, sender, creation_code("DelegationManager") + _word_address(sender))
    entry_point = _deploy(url, sender, creation_code("EntryPoint"))
    delegator = _deploy(
        url,
        sender,
        creation_code("EIP7702StatelessDeleGator") + _word_address(manager) + _word_address(entry_point),
    )
    enforcers = {name: _deploy(url, sender, creation_code(name)) for name in ENFORCERS}
    addresses = [manager, delegator, *enforcers.values()]
    return {
        "manager": manager,
        "stateless_delegator": delegator,
        "entry_point": entry_point,
        "enforcers": enforcers,
        "code_hashes": {a: code_hash(url, a) for a in addresses},
    }


def record_in_config(config_path: Path, chain_id: int, section: dict, key: str = "delegation") -> bool:
    """Write `section` as `key:` (`delegation:`, `swap_market:`) of the chain with this id in config.yaml;
    False when the file or the chain is not there (the caller prints the section instead). Only that
    chain's entry is edited, so the file's comments stay (bot.config_text); the file stays 0600."""
    if not config_path.exists():
        return False
    text = config_path.read_text()
    edited = set_chain_key(text, chain_id, key, section)
    if edited is None:
        data = yaml.safe_load(text) or {}
        chains = data.get("chains") if isinstance(data, dict) else None
        entry = next((c for c in chains or [] if isinstance(c, dict) and c.get("id") == chain_id), None)
        if entry is None:
            return False
        entry[key] = section
        edited = yaml.safe_dump(data, sort_keys=False)
    write_private_file(config_path, edited.encode())
    return True


# The Delegation Framework v1.3.0's deterministic (CREATE2, salt "GATOR") deployments, the same address
# on every chain it is deployed to (MetaMask/delegation-framework, documents/Deployments.md).
CANONICAL_V1_3_0: dict[str, Any] = {
    "manager": "0xdb9b1e94b5b69df7e401ddbede43491141047db3",
    "stateless_delegator": "0x63c0c19a282a1b52b07dd5a65b58948a07dae32b",
    "enforcers": {
        "AllowedTargetsEnforcer": "0x7f20f61b1f09b08d970938f6fa563634d65c4eeb",
        "AllowedMethodsEnforcer": "0x2c21fd0cb9dc8445cb3fb0dc5e7bb0aca01842b5",
        "AllowedCalldataEnforcer": "0xc2b0d624c1c4319760c96503ba27c347f3260f55",
        "ExactCalldataEnforcer": "0x99f2e9bf15ce5ec84685604836f71ab835dbbded",
        "ValueLteEnforcer": "0x92bf12322527caa612fd31a0e810472bbb106a8f",
        "NativeTokenPeriodTransferEnforcer": "0x9bc0faf4aca5ae429f4c06aeeac517520cb16bd9",
        "ERC20PeriodTransferEnforcer": "0x474e3ae7e169e940607cc624da8a15eb120139ab",
        "TimestampEnforcer": "0x1046bb45c8d673d4ea75321280db34899413c069",
        "LimitedCallsEnforcer": "0x04658b29f6b82ed55274221a06fc97d318e25416",
        "NonceEnforcer": "0xde4f2fac4b3d87a1d9953ca5fc09fca7f366254f",
        "RedeemerEnforcer": "0xe144b0b2618071b4e56f746313528a669c7e65c5",
        "NativeTokenTransferAmountEnforcer": "0xf71af580b9c3078fbc2bbf16fbb8eed82b330320",
        "ERC20TransferAmountEnforcer": "0xf100b0819427117ecf76ed94b358b1a5b5c6d2fc",
        "ERC20BalanceChangeEnforcer": "0xcdf6ab796408598cea671d79506d7d48e97a5437",
    },
}


def pin_canonical(url: str) -> dict:
    """The config section for a real chain: the canonical addresses and the code hash each has there now.
    Refuses when any of them has no code (not deployed on this chain)."""
    addresses = [
        CANONICAL_V1_3_0["manager"],
        CANONICAL_V1_3_0["stateless_delegator"],
        *CANONICAL_V1_3_0["enforcers"].values(),
    ]
    hashes = {}
    for address in addresses:
        code = rpc(url, "eth_getCode", [address, "latest"])
        if code in ("0x", "0x0", None):
            raise DevChainError(f"no contract at {address} on this chain: the framework is not deployed here")
        hashes[address] = "0x" + keccak256(bytes.fromhex(code[2:])).hex()
    return {**CANONICAL_V1_3_0, "enforcers": dict(CANONICAL_V1_3_0["enforcers"]), "code_hashes": hashes}
