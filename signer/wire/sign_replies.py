"""The reply models a signing client reads, the base every reply model shares, and `parse_reply`.

signer.wire.replies describes the typed replies (read it first); this module holds the part a client
that only authenticates, reads the policy and signs (`owlia sign send`) needs: `Reply`, `auth`,
`sign.request` / `sign.status` and `policy.show`. The other 35 models, defined on first need, are in
signer.wire.replies. Import each model from the module that defines it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, ValidationError

from policies.decision import Outcome
from signer.wire.protocol import RequestStatus, Scope, Uint256

__all__ = [
    "SIGN_REPLIES",
    "AuthReply",
    "DecisionJson",
    "FeeClampJson",
    "FindingJson",
    "PolicyShowReply",
    "Reply",
    "ReplyError",
    "Seconds",
    "SignReply",
    "SpendJson",
    "dump_reply",
    "parse_reply",
]

# Times as the signer wrote them: a whole number stays an int, so the JSON is unchanged byte for byte.
Seconds = StrictInt | StrictFloat


class ReplyError(ValueError):
    """A reply that does not match its method's model: the client refuses it (the signer is not
    speaking this protocol, or something between them forged it)."""


class Reply(BaseModel):
    """Base of every reply model (and of the parts they nest).

    `extra="forbid"` is how the signer writes them. A client reads them with `parse_reply`, which
    validates with `extra="ignore"`: pydantic-core then drops unknown fields at every level, in one
    pass and without a Python call per nested model."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built on first use


# ---- parts --------------------------------------------------------------------------------------


class FindingJson(Reply):
    outcome: Outcome
    rule_id: str
    reason: str


class SpendJson(Reply):
    chain_id: StrictInt
    asset: str
    amount: Uint256
    usd_micros: Uint256 | None


class DecisionJson(Reply):
    """A decision as `signer.records.decision_to_json` writes it."""

    outcome: Outcome
    rule_id: str
    reason: str
    findings: tuple[FindingJson, ...]
    spends: tuple[SpendJson, ...]
    new_recipients: tuple[str, ...]


class FeeClampJson(Reply):
    """A tip the node asked above the chain's ceiling, and the one signed (signer.fees.note_clamp)."""

    node_priority_fee_per_gas: Uint256
    max_priority_fee_per_gas: Uint256
    reason: str


# ---- replies ------------------------------------------------------------------------------------


class AuthReply(Reply):
    client: str
    scope: Scope


class SignReply(Reply):
    """`sign.request`, `sign.status` and the companion's answers: one request's outcome.

    Written by `signer.records.outcome` and stored verbatim in the request's row; the optional
    fields are present only where they apply (a signature, an escalation, an answer, a replay)."""

    status: RequestStatus
    request_id: str
    summary: str = ""
    rule_id: str | None = None
    reason: str | None = None
    decision: DecisionJson | None = None
    tx_hash: str | None = None
    chain_id: StrictInt | None = None
    sender: str | None = None
    nonce: StrictInt | None = None
    broadcast: StrictBool | None = None
    expires_at: Seconds | None = None
    error: str | None = None
    broadcast_unknown: str | None = None
    approved_by: str | None = None
    denied_by: str | None = None
    tier: StrictInt | None = None
    policy_hash: str | None = None
    note: str | None = None
    fee_clamped: FeeClampJson | None = None
    state: str | None = None  # sign.status: the row's own status (e.g. pending_approval after it expired)
    replayed: StrictBool = False

    @property
    def signed(self) -> bool:
        return self.status is RequestStatus.SIGNED


class PolicyShowReply(Reply):
    policy_hash: str
    policy: dict[str, Any]  # policies.model.Policy validates it


SIGN_REPLIES: dict[str, type[Reply]] = {
    "auth": AuthReply,
    "sign.request": SignReply,
    "sign.status": SignReply,
    "policy.show": PolicyShowReply,
}


def parse_reply(method: str, result: Any) -> Reply:
    """A method's `result` as its model, unknown fields dropped (a newer signer may add some) at every
    level; `ReplyError` if it does not match: a missing field, a wrong type, an unknown status."""
    model = SIGN_REPLIES.get(method)
    if model is None:
        from signer.wire.replies import (  # lazy: 11 ms, 408 KiB
            REPLIES,  # every other method's model, defined on first need
        )

        model = REPLIES.get(method)
    if model is None:
        raise ReplyError(
            f"the signer answered {method!r}, a method this client has no reply model for: refused"
        )
    try:
        return model.model_validate(result, extra="ignore")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the reply)"
        raise ReplyError(
            f"the signer's reply to {method!r} does not match its model ({exc.error_count()} problem(s); "
            f"first at {where}: {first['msg']}): refused. Is the signer the same version as this "
            "client (`owlia signer status`)?"
        ) from None


def dump_reply(reply: Reply) -> bytes:
    """The reply's JSON as the signer sends it: the fields its handler set, in the model's order."""
    return reply.__pydantic_serializer__.to_json(reply, exclude_unset=True)
