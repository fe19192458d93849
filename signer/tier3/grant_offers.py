"""Tier 3 grants signed on the phone: the signer offers, the main key signs, the signer checks.

Why: in the single-host layout the main key must never be on the signer's host, so the owner's phone
signs grants, and its only link to the signer is the untrusted bridge. Flow (docs/tier3.md):
1. a paired device asks (`tier3.offer`, its signature over a fresh, single-use proof);
2. the signer builds the widest grant its policy allows for the current session key (the same
   `grant_offer` wire form as the CLI companion: words, unsigned delegations, EIP-712 documents), keeps
   it for a few minutes under an offer id, and signs its hash with its identity key, so the bridge can
   neither alter what the phone shows nor what it signs;
3. the device answers (`tier3.grant_answer`) with one signature per delegation; the answer is for that
   device's offer, once, before it expires, and the signed delegations then go through exactly the
   checks of `tier3.grant` (signature of the delegator, every caveat against the policy, the chain).
Nothing the phone or the bridge says is believed: the grant installed is the offer's delegations with
signatures the signer verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from signer.chain import ChainError
from signer.wire.messages import (
    GRANT_ANSWER_DOMAIN,
    GRANT_ASK_DOMAIN,
    GRANT_OFFER_DOMAIN,
    grant_answer_body,
    grant_ask_body,
    signed_message,
)
from signer.wire.protocol import ErrorCode, RpcError

if TYPE_CHECKING:
    from signer.engine import Engine
    from signer.tier1.approvals import Approvals
    from signer.wire.requests import Tier3AnswerParams, Tier3OfferParams

OFFER_TTL = 600.0  # seconds an offer may be answered
MAX_OFFERS = 8  # open offers at once (a device asking in a loop cannot grow memory)
REFUSED = "tier3.offer_refused"


def offer_hash(offer: dict[str, Any]) -> str:
    """sha256 of the offer's canonical JSON (ensure_ascii=False, as a request's hash): what the signer
    signs and the page recomputes."""
    body = {k: v for k, v in offer.items() if k != "signer_sig"}
    return hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()


@dataclass(frozen=True)
class OpenOffer:
    device_id: str
    chain_id: int
    digest: str
    expires_at: float
    delegations: tuple[dict[str, Any], ...]


class GrantOffers:
    """Open offers in memory: a restart drops them (the phone asks again), never widens one."""

    def __init__(self, approvals: Approvals, engine: Engine) -> None:
        self.approvals = approvals  # devices, identity key, clock
        self.engine = engine  # policy, chains, session keys, Tier 3 (the Tier 1 port does not carry Tier 3)
        self._open: dict[str, OpenOffer] = {}

    async def offer(
        self, params: Tier3OfferParams, rotate_key: Callable[[str, str], Awaitable[None]]
    ) -> dict[str, Any]:
        """Authorize the device, optionally rotate the session key (`rotate_key(key_id)`), build and sign."""
        devices, engine = self.approvals.devices, self.engine
        message = signed_message(
            GRANT_ASK_DOMAIN,
            grant_ask_body(params.device_id, params.chain_id, params.days, params.rotate, params.ts),
        )
        evidence = {"device_id": params.device_id, "chain_id": params.chain_id}
        device = await devices.authorize(
            params.device_id, "approve", message, params.signature, REFUSED, evidence
        )
        await devices.consume_proof(message, params.ts, REFUSED, evidence)
        tier3 = engine.tier2.tier3
        chain = engine.chains.get(params.chain_id)
        contracts = None if chain is None or tier3 is None else tier3.contracts(chain)
        if chain is None or tier3 is None or contracts is None:
            raise await devices.refuse(
                REFUSED,
                evidence,
                f"chain {params.chain_id} has no Tier 3 contracts in the "
                "signer's config.yaml (chains[].delegation)",
            )
        if params.rotate:
            old = engine.keys.current(params.chain_id)
            if old is None:
                raise await devices.refuse(REFUSED, evidence, "there is no session key to rotate")
            await rotate_key(old.key_id, params.device_id)
        key = engine.keys.current(params.chain_id)
        if key is None:
            raise await devices.refuse(
                REFUSED,
                evidence,
                f"the signer has no active session key on chain "
                f"{params.chain_id}: `owlia signer session-key create`",
            )
        from signer.wire.grant_offer import grant_offer  # lazy: 29 ms, 3360 KiB (2 imports)
        from signer.wire.grants import GrantError, derive_lanes, describe  # Tier 3 only: not held at idle

        account = device.main_address.lower()
        try:
            if not await tier3._delegated(chain, contracts, account):
                raise await devices.refuse(
                    REFUSED,
                    evidence,
                    f"the main account {account} is not a smart account on "
                    f"chain {params.chain_id} yet: authorize it first "
                    "(EIP-7702, from the phone)",
                )
            nonce = await tier3.current_nonce(chain, contracts, account)
            now = await chain.latest_timestamp()
        except ChainError as exc:
            raise RpcError(ErrorCode.UNAVAILABLE, f"cannot read the chain: {exc}") from None
        expires_at = min(now + params.days * 86400, int(key.expires_at))
        policy = engine.policy
        try:
            lanes = derive_lanes(
                policy, params.chain_id, expires_at=expires_at, start=now, nonce=nonce, delegator=account
            )
        except GrantError as exc:
            raise await devices.refuse(REFUSED, evidence, str(exc)) from None
        words = [describe(lane, policy, params.chain_id) for lane in lanes]
        offer = grant_offer(
            lanes,
            words,
            session_address=key.address,
            delegator=account,
            chain_id=params.chain_id,
            manager=contracts.manager,
            enforcers=contracts.enforcer_map(),
            salt=secrets.randbits(64),
        )
        clock = self.approvals.clock()
        self._expire(clock)
        if len(self._open) >= MAX_OFFERS:
            raise await devices.refuse(
                REFUSED,
                evidence,
                f"too many grant offers are open: answer one or wait {int(OFFER_TTL / 60)} minutes",
            )
        offer_id = "off_" + secrets.token_hex(8)
        offer.update(
            {
                "offer_id": offer_id,
                "device_id": params.device_id,
                "account": account,
                "delegate": key.address.lower(),
                "key_id": key.key_id,
                "nonce": str(nonce),
                "expires_at": int(clock + OFFER_TTL),
            }
        )
        digest = offer_hash(offer)
        self._open[offer_id] = OpenOffer(
            params.device_id, params.chain_id, digest, clock + OFFER_TTL, tuple(offer["delegations"])
        )
        await engine.writer.run(
            lambda conn: engine.audit.append(
                "tier3.offered",
                {
                    "offer_id": offer_id,
                    "device_id": params.device_id,
                    "chain_id": params.chain_id,
                    "delegate": key.address,
                    "lanes": len(lanes),
                },
            )
        )
        return {
            **offer,
            "signer_sig": self.approvals.identity.sign(GRANT_OFFER_DOMAIN, {"offer_hash": digest}),
        }

    async def answer(self, params: Tier3AnswerParams) -> tuple[int, list[dict[str, Any]]]:
        """(chain id, signed delegations) of a device's answer to its own open offer, used up by this call;
        the caller installs them through `tier3.grant`'s checks."""
        devices = self.approvals.devices
        message = signed_message(
            GRANT_ANSWER_DOMAIN,
            grant_answer_body(
                params.device_id, params.offer_id, params.offer_hash, params.signatures, params.ts
            ),
        )
        evidence = {"device_id": params.device_id, "offer_id": params.offer_id}
        await devices.authorize(params.device_id, "approve", message, params.signature, REFUSED, evidence)
        await devices.consume_proof(message, params.ts, REFUSED, evidence)
        self._expire(self.approvals.clock())
        open_offer = self._open.get(params.offer_id)
        if open_offer is None:
            raise await devices.refuse(
                REFUSED,
                evidence,
                "no such open grant offer (answered already, expired, or never made): ask for a new one",
            )
        if open_offer.device_id != params.device_id or not hmac.compare_digest(
            open_offer.digest, params.offer_hash
        ):
            raise await devices.refuse(REFUSED, evidence, "this answer is not for the offer the signer made")
        if len(params.signatures) != len(open_offer.delegations):
            raise await devices.refuse(REFUSED, evidence, "one signature per delegation of the offer")
        del self._open[params.offer_id]  # single use, whatever the checks below say
        signed = [{**d, "signature": s} for d, s in zip(open_offer.delegations, params.signatures)]
        return open_offer.chain_id, signed

    def _expire(self, now: float) -> None:
        for offer_id in [k for k, o in self._open.items() if o.expires_at <= now]:
            del self._open[offer_id]
