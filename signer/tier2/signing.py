"""Tier 2 in memory: simulate, build and sign an allowed request with the chain's session key.

Nothing here is durable or leaves the process. The engine writes the outcome together with the
decision in one transaction, and only then replies or broadcasts; if that write fails it drops
the signature and hands the nonce out again (`Ending.sender`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from policies.decision import Decision
from policies.intent import Decoded
from signer import records
from signer.chain import Chain, ChainError, FeeAboveCeiling, GasAboveCeiling, SimulationReverted, WrongChain
from signer.ledger import Ledger
from signer.tier2.session_keys import SessionKeys
from signer.wire.txcodec import Eip1559Tx, sign_eip1559

if TYPE_CHECKING:  # imported by the daemon only when a chain has Tier 3 contracts (idle memory)
    from signer.tier3.grants import Tier3


@dataclass(frozen=True, slots=True)
class Ending:
    """How an allowed request ended in memory, before any of it is durable."""

    result: records.SignOutcome  # the reply, stored as the request's outcome
    audit_kind: str  # sign.signed or sign.abandoned, written right after sign.decided
    audit_body: records.EndingRecord
    spend_state: str  # the reservation as written: committed, or released when nothing was signed
    raw_tx: bytes | None = None  # the signed transaction, to broadcast once durable
    sender: str | None = None  # whose nonce to hand out again if the record cannot be written


@dataclass(frozen=True, slots=True)
class SessionSigner:
    keys: SessionKeys
    ledger: Ledger
    tier3: Tier3 | None = None  # set when a chain has Tier 3 contracts: allowed calls become redeems
    # (chain id, address) -> one past the highest nonce ever signed from it: what a node may report
    nonce_ceiling: Callable[[int, str], int] | None = None

    async def sign(
        self,
        request_id: str,
        decision: Decision,
        decoded: Decoded,
        chain: Chain,
        summary: str,
        *,
        frozen: bool,
        broadcast: bool,
        payer: str | None = None,
    ) -> Ending:
        call = decoded.call
        key = self.keys.current(call.chain_id)
        if key is None or frozen:
            return self.abandoned(
                request_id,
                decision,
                summary,
                "session_key.unavailable",
                "the session key was revoked or the signer frozen before signing",
            )
        try:
            await chain.ensure_chain_id()  # before anything read from the node is relied on
        except ChainError as exc:
            return self.abandoned(request_id, decision, summary, _wrong_chain_rule(exc), str(exc))
        to, value, data, grant_id = call.to, call.value, call.data, None
        grant = self.tier3.live(call.chain_id) if self.tier3 is not None else None
        # a swap's output goes to the account it was decided for: the session key, or on Tier 3 the
        # main account of the grant that was live when it was decided
        if payer is not None and payer != (key.address.lower() if grant is None else grant.account):
            return self.abandoned(
                request_id,
                decision,
                summary,
                "session_key.changed",
                "the paying account changed while the swap was being checked; ask again",
            )
        if grant is None and self.tier3 is not None and self.tier3.is_tier3(call.chain_id):
            return self.abandoned(
                request_id,
                decision,
                summary,
                "tier3.no_grant",
                "this chain is a Tier 3 account and no grant is live: grant one from the companion",
            )
        if grant is not None and self.tier3 is not None:  # Tier 3: the caveats are the ceiling
            from signer.tier3.grants import (  # lazy: 42 ms, 2720 KiB
                Redeem,  # loaded already: a live grant means Tier 3 is
            )
            # configured (idle daemon, tests/signer/test_idle_memory.py: 0.5-2 MB per such cut)

            planned = await self.tier3.plan(decoded, grant, key.address)
            if not isinstance(planned, Redeem):
                return self.abandoned(request_id, decision, summary, planned.rule_id, planned.reason)
            to, value, data, grant_id = planned.to, planned.value, planned.data, planned.grant_id
        try:
            gas = await chain.gas_for(key.address, to, value, data)
            fees = await chain.fees()
        except SimulationReverted as exc:
            return self.abandoned(
                request_id,
                decision,
                summary,
                "simulation.reverted",
                f"the transaction would revert: {exc.reason}",
            )
        except FeeAboveCeiling as exc:
            return self.abandoned(request_id, decision, summary, "chain.max_fee", str(exc))
        except GasAboveCeiling as exc:
            return self.abandoned(request_id, decision, summary, "chain.max_gas", str(exc))
        except ChainError as exc:
            return self.abandoned(request_id, decision, summary, None, str(exc))
        try:
            ceiling = (
                None
                if self.nonce_ceiling is None
                else partial(self.nonce_ceiling, call.chain_id, key.address)
            )
            nonce = await chain.next_nonce(key.address, ceiling)
        except ChainError as exc:
            return self.abandoned(request_id, decision, summary, None, str(exc))
        try:  # a connection opened while fees and the nonce were read is asked its chain again
            await chain.ensure_chain_id()
        except ChainError as exc:
            chain.forget_nonce(key.address)
            return self.abandoned(request_id, decision, summary, _wrong_chain_rule(exc), str(exc))
        try:  # after the last await: a key revoked meanwhile is gone from here
            signing_key = self.keys.signing_key(key.key_id)
        except KeyError:
            chain.forget_nonce(key.address)
            return self.abandoned(
                request_id,
                decision,
                summary,
                "session_key.unavailable",
                "the session key was revoked before signing",
            )
        if grant is not None and (self.tier3 is None or self.tier3.live(call.chain_id) is not grant):
            chain.forget_nonce(key.address)  # likewise a grant revoked while the chain was being read
            return self.abandoned(
                request_id, decision, summary, "tier3.no_grant", "the grant was revoked before signing"
            )
        try:
            tx = Eip1559Tx(
                call.chain_id,
                nonce,
                fees.max_priority_fee_per_gas,
                fees.max_fee_per_gas,
                gas,
                to,
                value,
                data,
            )
            signed = sign_eip1559(tx, signing_key)
        except BaseException:
            chain.forget_nonce(key.address)
            raise
        tx_hash = "0x" + signed.tx_hash.hex()
        result = records.outcome(
            records.SIGNED,
            request_id,
            decision,
            summary,
            tx_hash=tx_hash,
            chain_id=call.chain_id,
            sender=key.address,
            nonce=nonce,
            broadcast=broadcast,
        )
        body: records.EndingRecord = {
            "request_id": request_id,
            "tx_hash": tx_hash,
            "sender": key.address,
            "key_id": key.key_id,
            "tx": tx.to_dict(),
        }
        if grant_id is not None:
            body["tier3_grant"] = grant_id
        return Ending(result, "sign.signed", body, "committed", raw_tx=signed.raw, sender=key.address)

    def abandoned(
        self, request_id: str, decision: Decision, summary: str, rule_id: str | None, reason: str
    ) -> Ending:
        """Nothing was signed: release the reservation now; the record says why."""
        self.ledger.release(request_id)
        result, body = records.abandoned(request_id, decision, summary, rule_id, reason)
        return Ending(result, "sign.abandoned", body, "released")


def _wrong_chain_rule(exc: ChainError) -> str | None:
    """The rule an abandoned request names when the node's chain id check failed: `chain.wrong_id`
    for a node on another chain, none for a node that could not be read."""
    return "chain.wrong_id" if isinstance(exc, WrongChain) else None
