"""The signed message formats the signer and its companions exchange: one definition for both ends.

Every signature is over domain-separated canonical JSON (`signed_message`), so a signature made for
one purpose (pairing, an approval answer, a freeze, a top-up, a request the signer delivers, a nonce
it quotes, the bridge's login) is useless for any other. The signer's registry checks what phones
sign; the companion checks what the signer signs with its identity key (`signed_by`); both build the
bodies with the same functions here. Ed25519 is verified with `cryptography` so the signer's import
closure stays free of PyNaCl.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, TypedDict

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "AnswerBody",
    "FreezeBody",
    "GrantAnswerBody",
    "GrantAskBody",
    "PairBody",
    "RevokeBody",
    "TopUpBody",
    "grant_ask_body",
    "POLICY_EDIT_DOMAIN",
    "POLICY_VIEW_DOMAIN",
    "HOME_VIEW_DOMAIN",
    "policy_edit_body",
    "grant_answer_body",
    "GRANT_OFFER_DOMAIN",
    "GRANT_ASK_DOMAIN",
    "GRANT_ANSWER_DOMAIN",
    "APPROVAL_DOMAIN",
    "BRIDGE_AUTH_DOMAIN",
    "FREEZE_DOMAIN",
    "MAX_CLOCK_SKEW",
    "NONCE_DOMAIN",
    "PAIR_DOMAIN",
    "REQUEST_DOMAIN",
    "REVOKE_DOMAIN",
    "TOPUP_DOMAIN",
    "answer_body",
    "freeze_body",
    "key_fingerprint",
    "normalize_code",
    "pair_body",
    "pairing_mac",
    "proof_is_fresh",
    "revoke_body",
    "signed_by",
    "signed_message",
    "topup_body",
    "verify_ed25519",
]

PAIR_DOMAIN = "owliabot-pair-v1"
APPROVAL_DOMAIN = "owliabot-approval-v1"
FREEZE_DOMAIN = "owliabot-freeze-v1"
TOPUP_DOMAIN = "owliabot-topup-v1"
BRIDGE_AUTH_DOMAIN = "owliabot-bridge-auth-v1"
MAX_CLOCK_SKEW = 120.0  # seconds a timestamped proof may be off (either way; see `proof_is_fresh`)
REQUEST_DOMAIN = "owliabot-request-v1"
NONCE_DOMAIN = "owliabot-nonce-v1"
REVOKE_DOMAIN = "owliabot-revoke-v1"
GRANT_ASK_DOMAIN = "owliabot-grant-ask-v1"  # a device asks for a Tier 3 grant offer
GRANT_OFFER_DOMAIN = "owliabot-grant-offer-v1"  # the signer signs the offer it built
GRANT_ANSWER_DOMAIN = "owliabot-grant-answer-v1"  # a device returns the main key's signatures
POLICY_VIEW_DOMAIN = "owliabot-policy-view-v1"  # the signer signs the policy in force it shows the phone
HOME_VIEW_DOMAIN = "owliabot-home-view-v1"  # and the balances and spending it shows on the phone's home
POLICY_EDIT_DOMAIN = "owliabot-policy-edit-v1"  # a device proposes edits over the policy it saw


class PairBody(TypedDict):
    pairing_id: str
    device_pub: str
    name: str
    main_address: str
    ts: float
    nonce: str


class AnswerBody(TypedDict):
    request_id: str
    request_hash: str
    action: str
    expires_at: float
    device_id: str
    tx_hash: str  # "" for an answer that carries no transaction


class FreezeBody(TypedDict):
    device_id: str
    action: str
    freeze_id: str
    ts: float


class TopUpBody(TypedDict):
    device_id: str
    key_id: str
    amount: str | None  # None: up to the cap
    ts: float


class RevokeBody(TypedDict):
    device_id: str
    target_device_id: str
    ts: float


class GrantAskBody(TypedDict):
    device_id: str
    chain_id: int
    days: int
    rotate: bool
    ts: float


class GrantAnswerBody(TypedDict):
    device_id: str
    offer_id: str
    offer_hash: str
    signatures: list[str]
    ts: float


def signed_message(domain: str, body: Mapping[str, object]) -> bytes:
    """Domain-separated canonical bytes: a signature for one purpose is useless for any other.
    Any JSON object: each purpose's body is one of the types above, or a signer reply's."""
    return domain.encode() + b"\n" + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def pair_body(
    pairing_id: str, device_pub: str, name: str, main_address: str, ts: float, nonce: str
) -> PairBody:
    return {
        "pairing_id": pairing_id,
        "device_pub": device_pub,
        "name": name,
        "main_address": main_address.lower(),
        "ts": ts,
        "nonce": nonce,
    }


def answer_body(
    request_id: str, request_hash: str, action: str, expires_at: float, device_id: str, tx_hash: str
) -> AnswerBody:
    return {
        "request_id": request_id,
        "request_hash": request_hash,
        "action": action,
        "expires_at": expires_at,
        "device_id": device_id,
        "tx_hash": tx_hash,
    }


def freeze_body(device_id: str, action: str, freeze_id: str, ts: float) -> FreezeBody:
    return {"device_id": device_id, "action": action, "freeze_id": freeze_id, "ts": ts}


def topup_body(device_id: str, key_id: str, amount: int | None, ts: float) -> TopUpBody:
    return {
        "device_id": device_id,
        "key_id": key_id,
        "amount": None if amount is None else str(amount),
        "ts": ts,
    }


def revoke_body(device_id: str, target_device_id: str, ts: float) -> RevokeBody:
    return {"device_id": device_id, "target_device_id": target_device_id, "ts": ts}


def grant_ask_body(device_id: str, chain_id: int, days: int, rotate: bool, ts: float) -> GrantAskBody:
    return {"device_id": device_id, "chain_id": chain_id, "days": days, "rotate": rotate, "ts": ts}


def grant_answer_body(
    device_id: str, offer_id: str, offer_hash: str, signatures: list[str], ts: float
) -> GrantAnswerBody:
    return {
        "device_id": device_id,
        "offer_id": offer_id,
        "offer_hash": offer_hash,
        "signatures": list(signatures),
        "ts": ts,
    }


def policy_edit_body(
    device_id: str, base_hash: str, edits: list[dict[str, Any]], ts: float
) -> dict[str, Any]:
    """What a device signs to edit the policy: the edits and the hash of the policy it saw them over.
    The main key signs the same bytes (EIP-191) when the edits loosen it: the passkey's word."""
    return {"device_id": device_id, "base_hash": base_hash, "edits": list(edits), "ts": ts}


def proof_is_fresh(ts: float, signer_now: float, wall_now: float) -> bool:
    """`min(signer, wall) - MAX_CLOCK_SKEW <= ts <= max(signer, wall) + MAX_CLOCK_SKEW`.

    A proof carries the phone's real time, and either clock may be off it: the signer's trails the
    system clock after a forward correction (it catches up at 1.1x), and it stays ahead for good
    after a wrong forward step was put right (it never goes back). Judging by one clock alone would
    then refuse every freeze, unfreeze and top-up, for hours or for ever: the kill switch must keep
    working whatever was done to the clock. Accepting between the two gives nothing away: only the
    device can sign a proof, whatever its date, and each is accepted once, for good (the used-proof
    cache is never pruned: proofs are a few a day, each signed by a paired device). The price: a
    bridge that held a proof back can deliver it (once) later than usual while the clocks disagree.
    """
    return min(signer_now, wall_now) - MAX_CLOCK_SKEW <= ts <= max(signer_now, wall_now) + MAX_CLOCK_SKEW


def pairing_mac(code: str, message: bytes) -> str:
    key = hashlib.sha256(normalize_code(code).encode()).hexdigest()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def normalize_code(code: str) -> str:
    return code.replace("-", "").replace(" ", "").upper()


def key_fingerprint(public_key_hex: str) -> str:
    """What the audit log records of a device key (a bare 32-byte hex value looks like a secret there)."""
    return hashlib.sha256(bytes.fromhex(public_key_hex)).hexdigest()


def verify_ed25519(public_key_hex: str, message: bytes, signature_hex: str) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex)).verify(
            bytes.fromhex(signature_hex), message
        )
    except (InvalidSignature, ValueError):
        return False
    return True


def signed_by(public_key: str, domain: str, body: Mapping[str, object], signature: object) -> bool:
    """True only for a well-formed signature by `public_key` over exactly this body."""
    return isinstance(signature, str) and verify_ed25519(public_key, signed_message(domain, body), signature)
