"""JSON shapes of what the signer decides: outcomes for clients, evidence for the audit log.

The audit record of a decision holds every input the evaluator read, so that
`signer.replay` can re-run the decision from the log alone and get the same answer.
"""

from __future__ import annotations

from typing import Required, TypedDict, Unpack

from pydantic_core import to_json

from policies.context import AssetChange, EvalContext, PriceQuote, QuoteKey, Simulated
from policies.decision import Decision, Finding, Outcome
from policies.intent import (
    Approval,
    Call,
    Claim,
    ContractCall,
    Decoded,
    Flag,
    Forbidden,
    RouterPayout,
    Swap,
    Transfer,
    Wrap,
)
from signer.wire.protocol import RequestStatus

SIGNED = RequestStatus.SIGNED
PENDING = RequestStatus.PENDING
DENIED = RequestStatus.DENIED
FAILED = RequestStatus.FAILED
EXPIRED = RequestStatus.EXPIRED
UNCONFIRMED = (
    RequestStatus.UNCONFIRMED
)  # the node refused it, hid it or its answer was lost: may still be mined
CONFIRMED = RequestStatus.CONFIRMED  # a receipt checked against the signer's own hash: status 1
REVERTED = RequestStatus.REVERTED  # the same, status 0: its spend stays counted
DROPPED = RequestStatus.DROPPED  # proven never minable (another of the signer's transactions took its nonce)
IN_FLIGHT = (SIGNED, UNCONFIRMED)  # rows the receipt watcher still follows


class FindingRecord(TypedDict):
    outcome: str
    rule_id: str
    reason: str


class SpendRecord(TypedDict):
    chain_id: int
    asset: str
    amount: str
    usd_micros: str | None


class DecisionRecord(TypedDict):
    """A decision as the audit log and the replies carry it (signer.wire.sign_replies.DecisionJson reads it)."""

    outcome: str
    rule_id: str
    reason: str
    findings: list[FindingRecord]
    spends: list[SpendRecord]
    new_recipients: list[str]


class OutcomeExtras(TypedDict, total=False):
    """The fields of an outcome that apply only to some requests (a signature, an escalation, an answer)."""

    tx_hash: str
    chain_id: int
    sender: str
    nonce: int
    broadcast: bool
    expires_at: float
    error: str
    broadcast_unknown: str
    approved_by: str
    denied_by: str
    tier: int
    policy_hash: str
    note: str
    fee_clamped: FeeClamp
    replayed: bool
    rule_id: str  # the deciding rule, its reason and the whole decision: absent before one was made
    reason: str
    decision: DecisionRecord
    state: str  # sign.status: the row's own status


class SignOutcome(OutcomeExtras, total=False):
    """A request's outcome: the reply a client gets and what its row stores, verbatim
    (signer.wire.sign_replies.SignReply is how a client reads it)."""

    status: Required[str]
    request_id: Required[str]
    summary: str


class AnswerFields(OutcomeExtras, total=False):
    """What a companion's answer changes in a pending request's outcome (signer.approvals)."""

    status: str


class CallRecord(TypedDict):
    chain_id: int
    to: str
    value: str
    data: str
    flags: list[str]
    authorization_list: bool
    raw_hash_signature: bool


class ActionRecord(TypedDict, total=False):
    """One decoded action (`type` says which; each kind has its own fields)."""

    type: Required[str]
    chain_id: int
    asset: str
    recipient: str | None
    spender: str
    amount: str
    method: str
    target: str
    selector: str
    depth: int
    value: str
    decoded: object
    rule_id: str
    reason: str
    router: str
    token_in: str
    token_out: str
    fee: int
    deadline: str
    amount_in: str
    amount_out_min: str
    sqrt_price_limit: str
    contract: str
    distributor: str
    index: str
    account: str


class SimulationRecord(TypedDict):
    reverted: bool
    error: str
    changes: list[list[str]]
    outflows: list[list[str]]


class DefiRecord(TypedDict, total=False):
    """What a swap, wrap or unwrap was decided on."""

    payer: str | None
    # policies.context.QuoteKey and the quote (None: no quote), as text
    swap_quotes: list[list[str | None]]
    simulation: SimulationRecord | None


class ContextRecord(DefiRecord, total=False):
    """The ledger snapshot a decision read; the DeFi keys only for a swap, wrap or unwrap."""

    now: Required[float]
    spent: Required[dict[str, str]]
    spent_usd: Required[dict[str, str]]
    tx_count: Required[dict[str, int]]
    new_recipients: Required[dict[str, int]]
    seen_recipients: Required[list[str]]
    prices: Required[dict[str, list[str | int] | None]]
    session_key_expires_at: Required[float | None]
    session_key_balance_cap: Required[str | None]
    frozen: Required[bool]


class FeeClamp(TypedDict):
    """A tip the node asked for above the chain's ceiling, clamped (signer.fees.note_clamp)."""

    node_priority_fee_per_gas: str
    max_priority_fee_per_gas: str
    reason: str


class EndingRecord(TypedDict, total=False):
    """The `sign.signed` or `sign.abandoned` audit body of an allowed request (signer.tier2.Ending)."""

    request_id: Required[str]
    tx_hash: str
    sender: str
    key_id: str
    tx: dict[str, int | str]  # signer.wire.txcodec.Eip1559Tx.to_dict
    tier3_grant: str
    rule_id: str | None
    reason: str
    fee_clamped: FeeClamp


class DecidedRecord(TypedDict, total=False):
    """The `sign.decided` audit body: every input the evaluator read (signer.replay re-runs it)."""

    request_id: Required[str]
    client: Required[str]
    source: Required[str]
    idempotency_key: Required[str]
    request_hash: Required[str]
    call: Required[CallRecord]
    actions: Required[list[ActionRecord]]
    context: Required[ContextRecord]
    policy_hash: Required[str]
    decision: Required[DecisionRecord]
    agent_reason_unverified: Required[str | None]
    pre_check: Required[str | None]
    policy_decision: DecisionRecord  # the policy's own answer, when the signer overrode it


def encoded(outcome: SignOutcome) -> bytes:
    """An outcome as its request row keeps it (replayed verbatim), compact, like the reply frame; also
    the reply's `result`, byte for byte (signer.wire.protocol.EncodedResult)."""
    return to_json(outcome)


def stored(outcome: SignOutcome) -> str:
    """`encoded` as the text column holds it."""
    return encoded(outcome).decode()


def call_to_json(call: Call) -> CallRecord:
    return {
        "chain_id": call.chain_id,
        "to": call.to,
        "value": str(call.value),
        "data": "0x" + call.data.hex(),
        "flags": sorted(f.value for f in call.flags),
        "authorization_list": call.authorization_list,
        "raw_hash_signature": call.raw_hash_signature,
    }


def call_from_json(data: CallRecord) -> Call:
    return Call(
        chain_id=int(data["chain_id"]),
        to=data["to"],
        value=int(data["value"]),
        data=bytes.fromhex(data["data"][2:]),
        flags=frozenset(Flag(f) for f in data["flags"]),
        authorization_list=bool(data["authorization_list"]),
        raw_hash_signature=bool(data["raw_hash_signature"]),
    )


def action_to_json(action: object) -> ActionRecord:
    if isinstance(action, Transfer):
        return {
            "type": "transfer",
            "chain_id": action.chain_id,
            "asset": action.asset,
            "recipient": action.recipient,
            "amount": str(action.amount),
        }
    if isinstance(action, Approval):
        return {
            "type": "approval",
            "chain_id": action.chain_id,
            "asset": action.asset,
            "spender": action.spender,
            "amount": str(action.amount),
            "method": action.method,
        }
    if isinstance(action, ContractCall):
        return {
            "type": "call",
            "chain_id": action.chain_id,
            "target": action.target,
            "selector": "0x" + action.selector.hex(),
            "depth": action.depth,
            "value": str(action.value),
            "decoded": action.decoded,
        }
    if isinstance(action, Forbidden):
        return {"type": "forbidden", "rule_id": action.rule_id, "reason": action.reason}
    if isinstance(action, Swap):
        return {
            "type": "swap",
            "chain_id": action.chain_id,
            "router": action.router,
            "token_in": action.token_in,
            "token_out": action.token_out,
            "fee": action.fee,
            "recipient": action.recipient,
            "deadline": str(action.deadline),
            "amount_in": str(action.amount_in),
            "amount_out_min": str(action.amount_out_min),
            "sqrt_price_limit": str(action.sqrt_price_limit),
        }
    if isinstance(action, RouterPayout):
        return {
            "type": "payout",
            "chain_id": action.chain_id,
            "router": action.router,
            "asset": action.asset,
            "recipient": action.recipient,
            "method": action.method,
        }
    if isinstance(action, Wrap):
        return {
            "type": "unwrap" if action.unwrap else "wrap",
            "chain_id": action.chain_id,
            "contract": action.contract,
            "amount": str(action.amount),
        }
    if isinstance(action, Claim):
        return {
            "type": "claim",
            "chain_id": action.chain_id,
            "distributor": action.distributor,
            "index": str(action.index),
            "account": action.account,
            "amount": str(action.amount),
        }
    raise TypeError(type(action).__name__)


def decoded_to_json(decoded: Decoded) -> list[ActionRecord]:
    return [action_to_json(a) for a in decoded.actions]


def context_to_json(ctx: EvalContext) -> ContextRecord:
    """Keys joined as `chain:asset:window` and `chain:asset` (`context_from_json` splits them back).

    Formatted with one f-string per key rather than `":".join(str(p) for p in key)`: the same text
    (`!s` is `str`), without a generator per key; this runs for every request."""
    record: ContextRecord = {
        "now": ctx.now,
        "spent": {
            f"{chain!s}:{asset!s}:{window!s}": str(v) for (chain, asset, window), v in ctx.spent.items()
        },
        "spent_usd": {str(k): str(v) for k, v in ctx.spent_usd.items()},
        "tx_count": {str(k): v for k, v in ctx.tx_count.items()},
        "new_recipients": {str(k): v for k, v in ctx.new_recipients.items()},
        "seen_recipients": sorted(ctx.seen_recipients),
        "prices": {
            f"{chain!s}:{asset!s}": None if q is None else [str(q.usd_micros_per_unit), q.decimals]
            for (chain, asset), q in ctx.prices.items()
        },
        "session_key_expires_at": ctx.session_key_expires_at,
        "session_key_balance_cap": None
        if ctx.session_key_balance_cap is None
        else str(ctx.session_key_balance_cap),
        "frozen": ctx.frozen,
    }
    if ctx.payer is None and not ctx.swap_quotes and ctx.simulation is None:
        return record
    return {**record, **_defi_context(ctx)}


def _defi_context(ctx: EvalContext) -> DefiRecord:
    """What a swap, wrap or unwrap was decided on (absent for every other request, whose records keep
    the shape they always had)."""
    sim = ctx.simulation
    return {
        "payer": ctx.payer,
        "swap_quotes": [
            [*map(str, key), None if q is None else str(q)] for key, q in ctx.swap_quotes.items()
        ],
        "simulation": None
        if sim is None
        else {
            "reverted": sim.reverted,
            "error": sim.error,
            "changes": [[c.account, c.asset, str(c.delta)] for c in sim.changes],
            "outflows": [[c.account, c.asset, str(c.delta)] for c in sim.outflows],
        },
    }


def _simulated_from_json(data: SimulationRecord | None) -> Simulated | None:
    if data is None:
        return None
    return Simulated(
        tuple(AssetChange(a, asset, int(d)) for a, asset, d in data["changes"]),
        bool(data["reverted"]),
        data["error"],
        tuple(AssetChange(a, asset, int(d)) for a, asset, d in data["outflows"]),
    )


def _quote_from_json(entry: list[str | None]) -> tuple[QuoteKey, int | None]:
    chain, quoter, token_in, token_out, fee, amount = (str(part) for part in entry[:6])
    quote = entry[6]
    return (int(chain), quoter, token_in, token_out, int(fee), int(amount)), None if quote is None else int(
        quote
    )


def context_from_json(data: ContextRecord) -> EvalContext:
    def spent_key(k: str) -> tuple[int, str, int]:
        chain, asset, period = k.split(":")
        return int(chain), asset, int(period)

    def price_key(k: str) -> tuple[int, str]:
        chain, asset = k.split(":")
        return int(chain), asset

    cap = data["session_key_balance_cap"]
    return EvalContext(
        now=data["now"],
        spent={spent_key(k): int(v) for k, v in data["spent"].items()},
        spent_usd={int(k): int(v) for k, v in data["spent_usd"].items()},
        tx_count={int(k): int(v) for k, v in data["tx_count"].items()},
        new_recipients={int(k): int(v) for k, v in data["new_recipients"].items()},
        seen_recipients=frozenset(data["seen_recipients"]),
        prices={
            price_key(k): None if v is None else PriceQuote(int(v[0]), int(v[1]))
            for k, v in data["prices"].items()
        },
        session_key_expires_at=data["session_key_expires_at"],
        session_key_balance_cap=None if cap is None else int(cap),
        frozen=data["frozen"],
        payer=data.get("payer"),
        swap_quotes=dict(_quote_from_json(entry) for entry in data.get("swap_quotes", ())),
        simulation=_simulated_from_json(data.get("simulation")),
    )


def decision_to_json(decision: Decision) -> DecisionRecord:
    return {
        "outcome": decision.outcome.value,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "findings": [
            {"outcome": f.outcome.value, "rule_id": f.rule_id, "reason": f.reason} for f in decision.findings
        ],
        "spends": [
            {
                "chain_id": s.chain_id,
                "asset": s.asset,
                "amount": str(s.amount),
                "usd_micros": None if s.usd_micros is None else str(s.usd_micros),
            }
            for s in decision.spends
        ],
        "new_recipients": list(decision.new_recipients),
    }


def outcome(
    status: str,
    request_id: str,
    decision: Decision | None,
    summary: str,
    /,
    **extra: Unpack[OutcomeExtras],
) -> SignOutcome:
    """The reply a client gets. `summary` is the signer's own reading of the bytes."""
    if decision is None:
        return {"status": status, "request_id": request_id, "summary": summary, **extra}
    return {
        "status": status,
        "request_id": request_id,
        "summary": summary,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "decision": decision_to_json(decision),
        **extra,
    }


def deny(rule_id: str, reason: str, base: Decision | None = None) -> Decision:
    """A denial the signer adds itself (no RPC for the chain, a revert, a revoked key), after `base`'s findings."""
    finding = Finding(Outcome.DENY, rule_id, reason)
    return Decision(Outcome.DENY, rule_id, reason, (base.findings if base else ()) + (finding,))


def abandoned(
    request_id: str, decision: Decision, summary: str, rule_id: str | None, reason: str
) -> tuple[SignOutcome, EndingRecord]:
    """The reply and the `sign.abandoned` audit body for an allowed request that sent nothing:
    denied when a rule refused it (`rule_id`), failed otherwise."""
    if rule_id is not None:
        result = outcome(DENIED, request_id, deny(rule_id, reason, decision), summary)
    else:
        result = outcome(FAILED, request_id, decision, summary, error=reason)
    return result, {"request_id": request_id, "rule_id": rule_id, "reason": reason}
