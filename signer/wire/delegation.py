"""Tier 3 wire format: ERC-7710 delegations of the MetaMask Delegation Framework, encoded by hand.

The signer's import closure has no web3, so the few ABI shapes Tier 3 needs are written here with
the keccak from signer.wire.txcodec: the Delegation struct, its EIP-712 hash, the permission context,
`redeemDelegations`, `disableDelegation` and the enforcer views the signer reads. The companion
(CLI today, the phone app later) uses the same functions and the same JSON form (`to_json` /
`from_json`), so what the main key signs and what the signer checks are one definition.
Semantics follow the framework's DelegationManager and EncoderLib (MetaMask/delegation-framework).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import coincurve

from policies.kernel.keccak import keccak256

__all__ = [
    "CALL_COUNTS",
    "CAVEAT_TYPEHASH",
    "CURRENT_NONCE",
    "DELEGATION_TYPEHASH",
    "DISABLED_DELEGATIONS",
    "DISABLE_DELEGATION",
    "DOMAIN_NAME",
    "DOMAIN_VERSION",
    "EIP712_DOMAIN_TYPEHASH",
    "ERC20_TRANSFER",
    "GET_AVAILABLE_AMOUNT",
    "GET_DOMAIN_HASH",
    "INCREMENT_NONCE",
    "REDEEM_DELEGATIONS",
    "ROOT_AUTHORITY",
    "SINGLE_DEFAULT_MODE",
    "SPENT_MAP",
    "Caveat",
    "Delegation",
    "DelegationError",
    "addr_word",
    "available_amount_calldata",
    "call_counts_calldata",
    "current_nonce_calldata",
    "disable_calldata",
    "disabled_calldata",
    "domain_separator",
    "enc_array",
    "enc_bytes",
    "enc_tuple",
    "erc20_transfer_calldata",
    "execution_single",
    "increment_nonce_calldata",
    "permission_context",
    "recover",
    "redeem_calldata",
    "selector",
    "sign_digest",
    "spent_calldata",
    "word",
]

ROOT_AUTHORITY = b"\xff" * 32
SINGLE_DEFAULT_MODE = b"\x00" * 32  # ERC-7579 mode: single call, revert on failure
DOMAIN_NAME = "DelegationManager"
DOMAIN_VERSION = "1"

EIP712_DOMAIN_TYPEHASH = keccak256(
    b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
)
DELEGATION_TYPEHASH = keccak256(
    b"Delegation(address delegate,address delegator,bytes32 authority,Caveat[] caveats,uint256 salt)"
    b"Caveat(address enforcer,bytes terms)"
)
CAVEAT_TYPEHASH = keccak256(b"Caveat(address enforcer,bytes terms)")

_DELEGATION_TUPLE = "(address,address,bytes32,(address,bytes,bytes)[],uint256,bytes)"


def selector(signature: str) -> bytes:
    return keccak256(signature.encode())[:4]


REDEEM_DELEGATIONS = selector("redeemDelegations(bytes[],bytes32[],bytes[])")
DISABLE_DELEGATION = selector(f"disableDelegation({_DELEGATION_TUPLE})")
DISABLED_DELEGATIONS = selector("disabledDelegations(bytes32)")
GET_DOMAIN_HASH = selector("getDomainHash()")
GET_AVAILABLE_AMOUNT = selector("getAvailableAmount(bytes32,address,bytes)")
CALL_COUNTS = selector("callCounts(address,bytes32)")
ERC20_TRANSFER = selector("transfer(address,uint256)")
CURRENT_NONCE = selector("currentNonce(address,address)")  # NonceEnforcer
INCREMENT_NONCE = selector("incrementNonce(address)")  # NonceEnforcer, sent by the delegator itself
SPENT_MAP = selector("spentMap(address,bytes32)")  # Native/ERC20TransferAmountEnforcer

_ADDRESS = re.compile(r"0x[0-9a-f]{40}")


class DelegationError(ValueError):
    """A delegation that is malformed or does not verify; the text says which part."""


def _addr(value: str) -> str:
    low = value.lower() if isinstance(value, str) else ""
    if not _ADDRESS.fullmatch(low):
        raise DelegationError(f"not an address: {value!r}")
    return low


# ---- ABI pieces (head/tail encoding of the Solidity ABI) ---------------------------------------


def word(value: int) -> bytes:
    if value < 0 or value >= 1 << 256:
        raise DelegationError("a uint256 is out of range")
    return value.to_bytes(32, "big")


def addr_word(address: str) -> bytes:
    return b"\x00" * 12 + bytes.fromhex(_addr(address)[2:])


def enc_bytes(data: bytes) -> bytes:
    padded = data + b"\x00" * (-len(data) % 32)
    return word(len(data)) + padded


def enc_tuple(parts: list[tuple[bool, bytes]]) -> bytes:
    """Encode a tuple from (is_dynamic, encoding) parts: static parts inline, dynamic ones by offset."""
    head_size = sum(32 if dynamic else len(enc) for dynamic, enc in parts)
    heads, tails = b"", b""
    for dynamic, enc in parts:
        if dynamic:
            heads += word(head_size + len(tails))
            tails += enc
        else:
            heads += enc
    return heads + tails


def enc_array(elements: list[tuple[bool, bytes]]) -> bytes:
    return word(len(elements)) + enc_tuple(elements)


# ---- the structs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Caveat:
    enforcer: str  # lowercase address
    terms: bytes
    args: bytes = b""  # not signed: the redeemer may set it

    def packet_hash(self) -> bytes:
        return keccak256(CAVEAT_TYPEHASH + addr_word(self.enforcer) + keccak256(self.terms))

    def abi(self) -> bytes:
        return enc_tuple(
            [(False, addr_word(self.enforcer)), (True, enc_bytes(self.terms)), (True, enc_bytes(self.args))]
        )


@dataclass(frozen=True, slots=True)
class Delegation:
    delegate: str
    delegator: str
    caveats: tuple[Caveat, ...]
    salt: int
    authority: bytes = ROOT_AUTHORITY
    signature: bytes = b""

    def struct_hash(self) -> bytes:
        """EncoderLib._getDelegationHash: the key the manager and the enforcers store state under."""
        caveats = keccak256(b"".join(c.packet_hash() for c in self.caveats))
        return keccak256(
            DELEGATION_TYPEHASH
            + addr_word(self.delegate)
            + addr_word(self.delegator)
            + self.authority
            + caveats
            + word(self.salt)
        )

    def signing_digest(self, chain_id: int, manager: str) -> bytes:
        return keccak256(b"\x19\x01" + domain_separator(chain_id, manager) + self.struct_hash())

    def abi(self) -> bytes:
        caveats = enc_array([(True, c.abi()) for c in self.caveats])
        return enc_tuple(
            [
                (False, addr_word(self.delegate)),
                (False, addr_word(self.delegator)),
                (False, self.authority),
                (True, caveats),
                (False, word(self.salt)),
                (True, enc_bytes(self.signature)),
            ]
        )

    def typed_data(self, chain_id: int, manager: str) -> dict[str, Any]:
        """The EIP-712 document (eth_signTypedData_v4 shape) whose digest is `signing_digest`: what a phone
        or browser companion hashes and signs with its own EIP-712 library, and what it can show."""
        return {
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"},
                ],
                "Delegation": [
                    {"name": "delegate", "type": "address"},
                    {"name": "delegator", "type": "address"},
                    {"name": "authority", "type": "bytes32"},
                    {"name": "caveats", "type": "Caveat[]"},
                    {"name": "salt", "type": "uint256"},
                ],
                "Caveat": [{"name": "enforcer", "type": "address"}, {"name": "terms", "type": "bytes"}],
            },
            "primaryType": "Delegation",
            "domain": {
                "name": DOMAIN_NAME,
                "version": DOMAIN_VERSION,
                "chainId": chain_id,
                "verifyingContract": _addr(manager),
            },
            "message": {
                "delegate": self.delegate,
                "delegator": self.delegator,
                "authority": "0x" + self.authority.hex(),
                "caveats": [{"enforcer": c.enforcer, "terms": "0x" + c.terms.hex()} for c in self.caveats],
                "salt": str(self.salt),
            },
        }

    def signed(self, signature: bytes) -> Delegation:
        return Delegation(self.delegate, self.delegator, self.caveats, self.salt, self.authority, signature)

    def to_json(self) -> dict[str, Any]:
        return {
            "delegate": self.delegate,
            "delegator": self.delegator,
            "authority": "0x" + self.authority.hex(),
            "caveats": [
                {"enforcer": c.enforcer, "terms": "0x" + c.terms.hex(), "args": "0x" + c.args.hex()}
                for c in self.caveats
            ],
            "salt": str(self.salt),
            "signature": "0x" + self.signature.hex(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Delegation:
        try:
            caveats = tuple(
                Caveat(_addr(c["enforcer"]), _hex(c["terms"]), _hex(c.get("args", "0x")))
                for c in data["caveats"]
            )
            authority = _hex(data["authority"])
            if len(authority) != 32:
                raise DelegationError("authority must be 32 bytes")
            salt = data["salt"]
            if not isinstance(salt, (str, int)) or isinstance(salt, bool) or not str(salt).isdigit():
                raise DelegationError("salt must be a non-negative integer (decimal string)")
            if int(salt) >= 1 << 256:
                raise DelegationError("salt is out of the uint256 range")
            return cls(
                _addr(data["delegate"]),
                _addr(data["delegator"]),
                caveats,
                int(salt),
                authority,
                _hex(data["signature"]),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise DelegationError(f"malformed delegation: missing or wrong field {exc}") from None


def _hex(value: Any) -> bytes:
    if not isinstance(value, str) or not value.startswith("0x"):
        raise DelegationError("hex fields are 0x-prefixed strings")
    if len(value) > 2 * 65536:
        raise DelegationError("a hex field is too long")
    try:
        return bytes.fromhex(value[2:])
    except ValueError:
        raise DelegationError(f"not hex: {value[:20]!r}") from None


def domain_separator(chain_id: int, manager: str) -> bytes:
    return keccak256(
        EIP712_DOMAIN_TYPEHASH
        + keccak256(DOMAIN_NAME.encode())
        + keccak256(DOMAIN_VERSION.encode())
        + word(chain_id)
        + addr_word(manager)
    )


def sign_digest(digest: bytes, key: coincurve.PrivateKey) -> bytes:
    """65-byte r || s || v (v = 27/28), the form OpenZeppelin's ECDSA.recover takes."""
    sig = key.sign_recoverable(digest, hasher=None)
    return sig[:64] + bytes([27 + sig[64]])


def recover(digest: bytes, signature: bytes) -> str:
    if len(signature) != 65 or signature[64] not in (27, 28):
        raise DelegationError("the signature must be 65 bytes with v = 27 or 28")
    if (
        int.from_bytes(signature[32:64], "big")
        > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0
    ):
        raise DelegationError("the signature's s is in the upper half (malleable)")
    try:
        public = coincurve.PublicKey.from_signature_and_message(
            signature[:64] + bytes([signature[64] - 27]), digest, hasher=None
        )
    except Exception:  # noqa: BLE001 - coincurve raises plain Exception for an invalid signature
        raise DelegationError("the signature does not recover to any key") from None
    return "0x" + keccak256(public.format(compressed=False)[1:])[-20:].hex()


# ---- calls ---------------------------------------------------------------------------------------


def execution_single(target: str, value: int, data: bytes) -> bytes:
    """ERC-7579 single execution calldata: abi.encodePacked(target, value, callData)."""
    return bytes.fromhex(_addr(target)[2:]) + word(value) + data


def permission_context(chain: list[Delegation]) -> bytes:
    """abi.encode(Delegation[]), leaf first."""
    return enc_tuple([(True, enc_array([(True, d.abi()) for d in chain]))])


def redeem_calldata(chain: list[Delegation], target: str, value: int, data: bytes) -> bytes:
    contexts = enc_array([(True, enc_bytes(permission_context(chain)))])
    modes = enc_array([(False, SINGLE_DEFAULT_MODE)])
    executions = enc_array([(True, enc_bytes(execution_single(target, value, data)))])
    return REDEEM_DELEGATIONS + enc_tuple([(True, contexts), (True, modes), (True, executions)])


def disable_calldata(delegation: Delegation) -> bytes:
    return DISABLE_DELEGATION + enc_tuple([(True, delegation.abi())])


def available_amount_calldata(delegation_hash: bytes, manager: str, terms: bytes) -> bytes:
    return GET_AVAILABLE_AMOUNT + enc_tuple(
        [(False, delegation_hash), (False, addr_word(manager)), (True, enc_bytes(terms))]
    )


def call_counts_calldata(manager: str, delegation_hash: bytes) -> bytes:
    return CALL_COUNTS + addr_word(manager) + delegation_hash


def disabled_calldata(delegation_hash: bytes) -> bytes:
    return DISABLED_DELEGATIONS + delegation_hash


def erc20_transfer_calldata(to: str, amount: int) -> bytes:
    return ERC20_TRANSFER + addr_word(to) + word(amount)


def current_nonce_calldata(manager: str, delegator: str) -> bytes:
    return CURRENT_NONCE + addr_word(manager) + addr_word(delegator)


def increment_nonce_calldata(manager: str) -> bytes:
    """NonceEnforcer.incrementNonce(manager): sent by the main account, it ends every delegation that
    carries the old nonce, whoever holds them."""
    return INCREMENT_NONCE + addr_word(manager)


def spent_calldata(manager: str, delegation_hash: bytes) -> bytes:
    return SPENT_MAP + addr_word(manager) + delegation_hash
