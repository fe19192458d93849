"""Session-key top-ups: a Tier 1 transfer from the main account to a session key, never past its cap.

A paired companion asks (signed, single use); the request is escalated to it like any other, and
the answer is checked against the cap again when it arrives, since the balance may have changed.
Both checks count top-ups sent but not mined yet, a key has one top-up waiting at a time, and each
key's checks run one at a time (signer.tier1.topup_room).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from policies.decision import Decision, Finding, Outcome
from policies.decode import decode
from policies.intent import NATIVE, Call
from policies.units import format_amount
from signer import records
from signer.chain import ChainError
from signer.store.requests import Connection
from signer.wire.approval_request import ApprovalRequestBody
from signer.wire.messages import TOPUP_DOMAIN, signed_message, topup_body
from signer.wire.protocol import ErrorCode, KeyStatus, RpcError
from signer.wire.requests import TopUpRequestParams

if TYPE_CHECKING:
    from signer.chain import Chain
    from signer.tier1.devices import Evidence
    from signer.tier1.port import Escalations, SigningCore
    from signer.tier2.session_keys import SessionKeyInfo


async def room_under_cap(engine: SigningCore, key_id: str) -> tuple[SessionKeyInfo, Chain, int, int]:
    """An active session key, its chain, what it holds or has coming, and how much more it may be
    funded. Call it holding `engine.topups.lock(key_id)` until what the room is used for is recorded."""
    key = engine.keys.info(key_id)
    chain = None if key is None else engine.chains.get(key.chain_id)
    if key is None or key.status is not KeyStatus.ACTIVE or chain is None:
        raise RpcError(ErrorCode.NOT_FOUND, f"no active session key {key_id}")
    try:
        balance, room = await engine.topups.room(key, chain, engine.clock())
    except ChainError as exc:
        raise RpcError(ErrorCode.UNAVAILABLE, str(exc)) from None
    return key, chain, balance, room


def _out_of_room(engine: SigningCore, key: SessionKeyInfo, room: int) -> str:
    """Why a top-up amount is refused, in the chain's own units (base units only for a chain whose
    native asset the policy does not name)."""
    info = engine.policy.index.asset_info(key.chain_id, NATIVE)
    symbol, decimals = info if info is not None else ("wei", 0)
    cap = format_amount(key.balance_cap, decimals, symbol)
    if room <= 0:
        return (
            f"this session key already holds or has coming its whole cap of {cap} (top-ups not "
            "mined yet count): there is nothing to top up until it spends"
        )
    return (
        f"a top-up of this session key can be at most {format_amount(room, decimals, symbol)} (its cap "
        f"is {cap}, and what it holds or has coming counts); leave the amount out to fill it to the cap"
    )


async def exceeds_cap(
    engine: SigningCore, request: ApprovalRequestBody, chain: Chain, to: str, value: int
) -> bool:
    """At approval time: would this transfer take the key past its cap (or is the key gone)? If not,
    it counts against the room from now on, before it is recorded and sent."""
    session_key = request.get("session_key")
    if session_key is None:
        return True  # not a top-up: nothing it may fund
    key_id = session_key["key_id"]
    async with engine.topups.lock(key_id):
        key = engine.keys.info(key_id)
        if key is None or key.status is not KeyStatus.ACTIVE or key.address.lower() != to.lower():
            return True
        try:
            _balance, room = await engine.topups.room(key, chain, engine.clock())
        except ChainError as exc:
            raise RpcError(ErrorCode.UNAVAILABLE, str(exc)) from None
        if value > room:
            return True
        engine.topups.claim(request["request_id"], key_id)
        return False


async def request_topup(approvals: Escalations, params: TopUpRequestParams) -> records.SignOutcome:
    """Escalate a top-up the companion asked for; the reply is the pending request."""
    engine, devices = approvals.engine, approvals.devices
    message = signed_message(
        TOPUP_DOMAIN, topup_body(params.device_id, params.key_id, params.amount, params.ts)
    )
    evidence: Evidence = {"device_id": params.device_id, "key_id": params.key_id}
    await devices.authorize(params.device_id, "topup", message, params.signature, "topup.refused", evidence)
    await devices.consume_proof(message, params.ts, "topup.refused", evidence)
    async with engine.topups.lock(params.key_id):  # until this request is on record: the next one sees it
        pending = await _open_topup(approvals, params, evidence)
    approvals.announce()
    return pending


async def _open_topup(
    approvals: Escalations, params: TopUpRequestParams, evidence: Evidence
) -> records.SignOutcome:
    engine, devices = approvals.engine, approvals.devices
    waiting = engine.topups.waiting(params.key_id, approvals.clock())
    if waiting is not None:
        raise await devices.refuse(
            "topup.refused",
            evidence,
            f"a top-up of this key is already waiting for an "
            f"answer ({waiting}); answer it or let it expire first",
        )
    key, _chain, _balance, room = await room_under_cap(engine, params.key_id)
    amount = room if params.amount is None else params.amount
    if amount <= 0 or amount > room:
        raise await devices.refuse("topup.refused", evidence, _out_of_room(engine, key, room))
    now = approvals.clock()
    request_id = "req_" + secrets.token_hex(16)
    decoded = decode(Call(chain_id=key.chain_id, to=key.address, value=amount))
    rule_id, reason = "session_key.topup", f"top up session key {key.key_id} (cap {key.balance_cap} wei)"
    decision = Decision(Outcome.ESCALATE, rule_id, reason, (Finding(Outcome.ESCALATE, rule_id, reason),))
    summary = engine.summarize(decoded)
    expires_at = now + engine.pending_ttl
    body = await approvals.prepare(
        request_id=request_id,
        kind="topup",
        decoded=decoded,
        summary=summary,
        decision=decision,
        agent_reason=None,
        now=now,
        expires_at=expires_at,
    )
    body["session_key"] = {"key_id": key.key_id, "address": key.address, "balance_cap": str(key.balance_cap)}
    pending = records.outcome(records.PENDING, request_id, decision, summary, expires_at=expires_at)

    def record(conn: Connection) -> None:
        approvals.open_request(conn, body, pending, requester=params.device_id)
        engine.audit.append(
            "topup.requested",
            {
                "request_id": request_id,
                "device_id": params.device_id,
                "key_id": key.key_id,
                "amount": str(amount),
            },
        )

    await engine.writer.run(record)
    return pending
