"""Tier 3 from the companion: the main key's on-chain acts, each a pure function of its inputs.

- `authorize`: once, an EIP-7702 authorization making the main account an EIP7702StatelessDeleGator
  (a type-4 transaction the main account sends itself; no funds move);
- `sign_grant`: EIP-712 delegations to the session key, one per lane (signer.wire.grants), built from the
  policy and shown in words before this is called;
- `revoke_all`: `NonceEnforcer.incrementNonce(manager)` from the main account, a plain transaction:
  every delegation signed at the old nonce is dead on chain, known or not, signer or no signer;
- `disable`: `disableDelegation` for one delegation (for a delegation without the Nonce caveat);
- `freeze`: a new 7702 authorization to the zero address, in the same transaction as `incrementNonce`:
  the account is a plain EOA again, and authorizing it again later revives no earlier grant.
The wire form of a grant is `Delegation.to_json()` (signer.wire.delegation), so the phone app can produce
the same JSON and the signer checks it the same way.
"""

from __future__ import annotations

import time
from typing import Any

import coincurve
from eth_account import Account

from policies.kernel.addresses import to_checksum
from policies.kernel.rpc import JsonRpcHttp
from signer.wire.delegation import (
    Delegation,
    DelegationError,
    current_nonce_calldata,
    disable_calldata,
    disabled_calldata,
    increment_nonce_calldata,
    recover,
    sign_digest,
)
from signer.wire.grant_offer import (
    grant_offer,  # noqa: F401 - the companion's wire form, shared with the signer
)
from signer.wire.grants import Lane
from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559

ZERO_ADDRESS = "0x" + "00" * 20
AUTHORIZE_GAS = 100_000
FREEZE_GAS = 150_000  # the authorization and incrementNonce (a fresh storage slot: about 45k)
DISABLE_GAS = 200_000
REVOKE_ALL_GAS = 100_000


def authorize(
    key: coincurve.PrivateKey,
    *,
    chain_id: int,
    nonce: int,
    max_fee: int,
    max_priority_fee: int,
    implementation: str,
    to: str | None = None,
    data: bytes = b"",
    gas: int = AUTHORIZE_GAS,
) -> bytes:
    """A type-4 transaction from the main account: the authorization nonce is the transaction's nonce + 1.
    Sent to itself (no call) unless `to`/`data` name a call the main account makes in the same step."""
    secret = key.secret
    auth = Account.sign_authorization(
        {"chainId": chain_id, "address": implementation, "nonce": nonce + 1}, secret
    )
    signed = Account.sign_transaction(
        {
            "type": 4,
            "chainId": chain_id,
            "nonce": nonce,
            "to": _checksum(to or address_of(key)),
            "value": 0,
            "data": data,
            "gas": gas,
            "maxFeePerGas": max_fee,
            "maxPriorityFeePerGas": max_priority_fee,
            "authorizationList": [auth],
        },
        secret,
    )
    return bytes(signed.raw_transaction)


def freeze(key: coincurve.PrivateKey, *, manager: str, nonce_enforcer: str, **fees_and_nonce: int) -> bytes:
    """Undo the 7702 designation and bump the NonceEnforcer nonce in one transaction: every grant stops
    at once, and a later `authorize` revives none of them (they carry the old nonce). The main key
    keeps the funds."""
    return authorize(
        key,
        implementation=ZERO_ADDRESS,
        to=nonce_enforcer,
        data=increment_nonce_calldata(manager),
        gas=FREEZE_GAS,
        **fees_and_nonce,
    )


def revoke_all(
    key: coincurve.PrivateKey,
    *,
    chain_id: int,
    nonce: int,
    max_fee: int,
    max_priority_fee: int,
    manager: str,
    nonce_enforcer: str,
) -> bytes:
    """NonceEnforcer.incrementNonce(manager), sent by the main account: a plain transaction, valid whether
    or not the account is 7702-delegated, that ends every delegation carrying the old nonce."""
    tx = Eip1559Tx(
        chain_id,
        nonce,
        max_priority_fee,
        max_fee,
        REVOKE_ALL_GAS,
        nonce_enforcer.lower(),
        0,
        increment_nonce_calldata(manager),
    )
    return sign_eip1559(tx, key).raw


def sign_grant(
    key: coincurve.PrivateKey,
    lanes: list[Lane],
    *,
    session_address: str,
    chain_id: int,
    manager: str,
    enforcers: dict[str, str],
    salt: int,
) -> list[Delegation]:
    account = address_of(key)
    signed = []
    for i, lane in enumerate(lanes):
        delegation = lane.delegation(
            delegate=session_address, delegator=account, salt=salt + i, enforcers=enforcers
        )
        signed.append(delegation.signed(sign_digest(delegation.signing_digest(chain_id, manager), key)))
    return signed


def signed_from_offer(offer: dict[str, Any], signatures: list[str]) -> list[Delegation]:
    """The offer's delegations with the device's 65-byte signatures (0x hex), each checked against the
    delegator before it leaves the companion."""
    delegations = [Delegation.from_json(d) for d in offer["delegations"]]
    if len(signatures) != len(delegations):
        raise DelegationError("one signature per delegation")
    out = []
    for delegation, signature in zip(delegations, signatures):
        signed = delegation.signed(bytes.fromhex(signature.removeprefix("0x")))
        if (
            recover(signed.signing_digest(int(offer["chain_id"]), offer["manager"]), signed.signature)
            != delegation.delegator
        ):
            raise DelegationError("a signature is not the delegator's")
        out.append(signed)
    return out


def disable(
    key: coincurve.PrivateKey,
    delegation: Delegation,
    *,
    chain_id: int,
    nonce: int,
    max_fee: int,
    max_priority_fee: int,
    manager: str,
) -> bytes:
    """The delegator calls DelegationManager.disableDelegation itself (onlyDeleGator)."""
    tx = Eip1559Tx(
        chain_id,
        nonce,
        max_priority_fee,
        max_fee,
        DISABLE_GAS,
        manager.lower(),
        0,
        disable_calldata(delegation),
    )
    return sign_eip1559(tx, key).raw


def _checksum(address: str) -> str:
    return to_checksum(address)


class ChainLink:
    """The few JSON-RPC calls the companion's Tier 3 acts need: nonce, fees, send, wait, read."""

    def __init__(self, rpc_url: str, chain_id: int, *, timeout: float = 10.0) -> None:
        self.rpc = JsonRpcHttp(rpc_url, timeout=timeout)
        self.chain_id = chain_id

    def _call(self, method: str, *params):
        return self.rpc.call_blocking(method, list(params))

    def tx_fields(self, address: str) -> dict[str, int]:
        """nonce, max_fee and max_priority_fee for the next transaction from `address`."""
        block = self._call("eth_getBlockByNumber", "latest", False)
        tip = int(self._call("eth_maxPriorityFeePerGas"), 16)
        base = int(block.get("baseFeePerGas") or "0x0", 16)
        return {
            "chain_id": self.chain_id,
            "nonce": int(self._call("eth_getTransactionCount", address, "pending"), 16),
            "max_fee": 2 * base + tip,
            "max_priority_fee": tip,
        }

    def send(self, raw: bytes, timeout: float = 60.0) -> dict:
        tx_hash = self.rpc.call_blocking("eth_sendRawTransaction", ["0x" + raw.hex()], retry=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            receipt = self._call("eth_getTransactionReceipt", tx_hash)
            if receipt:
                return receipt
            time.sleep(0.2)
        raise TimeoutError(f"no receipt for {tx_hash} within {timeout:.0f}s")

    def code(self, address: str) -> bytes:
        return bytes.fromhex(self._call("eth_getCode", address, "latest")[2:])

    def is_disabled(self, manager: str, delegation: Delegation) -> bool:
        raw = self._call(
            "eth_call",
            {"to": manager, "data": "0x" + disabled_calldata(delegation.struct_hash()).hex()},
            "latest",
        )
        return int(raw, 16) != 0

    def node_chain_id(self) -> int:
        """The node's own chain id: a revoke read and sent on another chain would revoke nothing here."""
        return int(self._call("eth_chainId"), 16)

    def current_nonce(self, nonce_enforcer: str, manager: str, account: str) -> int:
        """The account's NonceEnforcer nonce: what a new grant must carry, and what revoke moves."""
        raw = self._call(
            "eth_call",
            {"to": nonce_enforcer, "data": "0x" + current_nonce_calldata(manager, account).hex()},
            "latest",
        )
        return int(raw, 16)

    def timestamp(self) -> int:
        return int(self._call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)

    def close(self) -> None:
        self.rpc.close()


def delegated_to(code: bytes) -> str | None:
    """The EIP-7702 designation in an account's code, or None for a plain account."""
    if len(code) == 23 and code[:3] == bytes.fromhex("ef0100"):
        return "0x" + code[3:].hex()
    return None
