"""Tier 3 from the companion: the main key's on-chain acts, each a pure function of its inputs.

- `authorize`: once, an EIP-7702 authorization making the main account an EIP7702StatelessDeleGator
  (a type-4 transaction the main account sends itself; no funds move);
- `sign_grant`: EIP-712 delegations to the session key, one per lane (signer.grants), built from the
  policy and shown in words before this is called;
- `disable`: `disableDelegation` for one delegation (revoke; rotation is revoke then grant);
- `freeze`: a new 7702 authorization to the zero address: the account is a plain EOA again and no
  delegation can be redeemed.
The wire form of a grant is `Delegation.to_json()` (signer.delegation), so the phone app can produce
the same JSON and the signer checks it the same way.
"""

from __future__ import annotations

import coincurve
from eth_account import Account

from signer.delegation import Delegation, disable_calldata, sign_digest
from signer.grants import Lane
from signer.txcodec import Eip1559Tx, address_of, sign_eip1559

ZERO_ADDRESS = "0x" + "00" * 20
AUTHORIZE_GAS = 100_000
DISABLE_GAS = 200_000


def authorize(key: coincurve.PrivateKey, *, chain_id: int, nonce: int, max_fee: int, max_priority_fee: int,
              implementation: str) -> bytes:
    """A self-sent type-4 transaction: the authorization nonce is the transaction's nonce + 1."""
    secret = key.secret
    auth = Account.sign_authorization({"chainId": chain_id, "address": implementation, "nonce": nonce + 1}, secret)
    signed = Account.sign_transaction({
        "type": 4, "chainId": chain_id, "nonce": nonce, "to": _checksum(address_of(key)), "value": 0, "data": b"",
        "gas": AUTHORIZE_GAS, "maxFeePerGas": max_fee, "maxPriorityFeePerGas": max_priority_fee,
        "authorizationList": [auth],
    }, secret)
    return bytes(signed.raw_transaction)


def freeze(key: coincurve.PrivateKey, **fees_and_nonce: int) -> bytes:
    """Undo the 7702 designation: every grant stops working at once; the main key keeps the funds."""
    return authorize(key, implementation=ZERO_ADDRESS, **fees_and_nonce)


def sign_grant(key: coincurve.PrivateKey, lanes: list[Lane], *, session_address: str, chain_id: int, manager: str,
               enforcers: dict[str, str], salt: int) -> list[Delegation]:
    account = address_of(key)
    signed = []
    for i, lane in enumerate(lanes):
        delegation = lane.delegation(delegate=session_address, delegator=account, salt=salt + i, enforcers=enforcers)
        signed.append(delegation.signed(sign_digest(delegation.signing_digest(chain_id, manager), key)))
    return signed


def disable(key: coincurve.PrivateKey, delegation: Delegation, *, chain_id: int, nonce: int, max_fee: int,
            max_priority_fee: int, manager: str) -> bytes:
    """The delegator calls DelegationManager.disableDelegation itself (onlyDeleGator)."""
    tx = Eip1559Tx(chain_id, nonce, max_priority_fee, max_fee, DISABLE_GAS, manager.lower(), 0,
                   disable_calldata(delegation))
    return sign_eip1559(tx, key).raw


def _checksum(address: str) -> str:
    from signer.approval_request import to_checksum

    return to_checksum(address)
