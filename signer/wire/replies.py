"""Typed replies: one pydantic model per signer method, shared by the daemon and every client.

The daemon's handlers return these (or JSON the same model accepts), and `SignerClient.call`
parses every `result` with the model of the method it called, so callers get attributes and a
forged or garbled reply is refused before any caller reads it (`ReplyError`).

Fields are strict (no `"yes"` for true, no `"5"` or `true` for 5): the signer writes real JSON types,
and a reply that needs coercing is not one it wrote. Amounts are decimal strings (`Uint256`).

Two rules, chosen on purpose:

- The signer writes them strictly: `extra="forbid"`, so a handler cannot send a field the model
  does not name. Only the fields a handler set are sent (`dump_reply`: unset optional fields are
  absent, not `null`), so the JSON on the wire is what the handlers wrote before they were typed.
- Clients read them tolerantly: `parse_reply` drops fields the model does not know (a newer signer
  may add some), and they never reach a caller. Everything the model does name is still checked:
  a missing field, a wrong type or an unknown status is refused.

The base, the replies a signing client reads (`auth`, `sign.request` / `sign.status`, `policy.show`),
`parse_reply` and `dump_reply` are signer.wire.sign_replies' (import them from there): a client that
only signs loads those and none of the 35 models below.

Nested bodies that have an owner of their own stay dicts on purpose: the policy (`policies.model`
validates it), the approval request a companion is shown (`signer.wire.approval_request`, which
hashes its exact JSON), Tier 3 delegations (`signer.wire.delegation`), audit record bodies (free-form
evidence, one shape per record kind) and the decoded actions of `policy.check`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import StrictBool, StrictInt

from signer.wire.protocol import KeyStatus, RequestStatus, Scope, Uint256
from signer.wire.sign_replies import SIGN_REPLIES, DecisionJson, Reply, Seconds, SignReply

__all__ = [
    "PolicyEditReply",
    "PolicyViewReply",
    "Tier3OfferReply",
    "REPLIES",
    "AddressJson",
    "AddressesReply",
    "ApprovalsStateReply",
    "ApprovalsWaitReply",
    "AuditEntry",
    "AuditTailReply",
    "AuditVerifyReply",
    "BalanceReply",
    "Checkpoint",
    "CheckpointAt",
    "ClientJson",
    "DeviceJson",
    "DeviceReply",
    "DevicesReply",
    "HomeReply",
    "InFlight",
    "InFlightTx",
    "PairBeginReply",
    "PairCompleteReply",
    "PendingApproval",
    "PolicyCheckReply",
    "PolicyReloadReply",
    "PolicyValidateReply",
    "ReloadStatus",
    "SessionKeyCreateReply",
    "SessionKeyJson",
    "SessionKeyRetireReply",
    "SessionKeysReply",
    "SignerState",
    "StatusReply",
    "Tier3AccountJson",
    "Tier3GrantJson",
    "Tier3GrantReply",
    "Tier3LaneJson",
    "Tier3RevokeReply",
    "Tier3StatusReply",
    "TopUpReply",
]


# ---- parts --------------------------------------------------------------------------------------


class SessionKeyJson(Reply):
    key_id: str
    chain_id: StrictInt
    address: str
    created_at: Seconds
    expires_at: Seconds
    status: KeyStatus
    balance_cap: Uint256


class DeviceJson(Reply):
    device_id: str
    name: str
    public_key: str
    main_address: str
    capabilities: tuple[str, ...]
    created_at: Seconds
    last_seen: Seconds | None
    revoked_at: Seconds | None
    active: StrictBool


class ClientJson(Reply):
    name: str
    scope: Scope


class InFlightTx(Reply):
    request_id: str
    status: RequestStatus
    chain_id: StrictInt
    tx_hash: str
    nonce: StrictInt
    created_at: Seconds
    held: dict[str, Uint256]


class InFlight(Reply):
    """Spends held by transactions not yet proven mined or dead; `transactions` for the admin only."""

    count: StrictInt
    unconfirmed: StrictInt
    held: dict[str, Uint256]
    transactions: tuple[InFlightTx, ...] | None = None


class CheckpointAt(Reply):
    seq: StrictInt
    hash: str


class Checkpoint(Reply):
    """The audit log's committed head, signed by the signer's identity key (signer.wire.witness)."""

    seq: StrictInt
    head: str
    at: CheckpointAt | None = None
    epoch: StrictInt | None = (
        None  # the state head's commit count (signer.store.state_head); absent from older signers
    )
    signer_sig: str


# ---- replies ------------------------------------------------------------------------------------


class StatusReply(Reply):
    version: str
    protocol: StrictInt
    uptime_seconds: Seconds
    clock_lag_seconds: Seconds
    unlocked: StrictBool
    frozen: StrictBool
    broadcast: StrictBool
    chains: tuple[StrictInt, ...]
    policy_hash: str
    session_keys: tuple[SessionKeyJson, ...]
    in_flight: InFlight
    client: ClientJson


class AddressJson(Reply):
    chain_id: StrictInt
    address: str
    key_id: str
    expires_at: Seconds


class Tier3AccountJson(Reply):
    chain_id: StrictInt
    address: str
    grant_id: str


class AddressesReply(Reply):
    addresses: tuple[AddressJson, ...]
    tier3_accounts: tuple[Tier3AccountJson, ...]
    # The companion's main account (None: no companion was ever paired) and how many paired companions
    # are not revoked: the bot shows the main account's balance and says how to pair when none is.
    main_account: str | None = None
    companions: StrictInt = 0


class BalanceReply(Reply):
    chain_id: StrictInt
    address: str
    token: str  # an address, or "native"
    balance: Uint256


class SessionKeysReply(Reply):
    session_keys: tuple[SessionKeyJson, ...]


class SessionKeyCreateReply(Reply):
    session_key: SessionKeyJson
    replayed: StrictBool = False


class SessionKeyRetireReply(Reply):
    """`session_key.rotate` (with the fresh key and a sweep hint) and `session_key.revoke`."""

    retired: SessionKeyJson
    session_key: SessionKeyJson | None = None
    sweep_hint: str | None = None
    replayed: StrictBool = False


class TopUpReply(Reply):
    """`session_key.topup`: funded on a dev chain, or how much room to fund from the main wallet."""

    funded: StrictBool
    address: str
    room: Uint256 | None = None
    hint: str | None = None
    key_id: str | None = None
    amount: Uint256 | None = None
    tx_hash: str | None = None
    by: str | None = None
    replayed: StrictBool = False


class PolicyValidateReply(Reply):
    valid: StrictBool
    policy_hash: str | None = None
    error: str | None = None


class PolicyCheckReply(Reply):
    summary: str
    decision: DecisionJson
    actions: list[dict[str, Any]]  # signer.records.decoded_to_json: one shape per action kind


class ReloadStatus(StrEnum):
    """What `policy.reload` did with the file (signer.tier1.policy_live)."""

    UNCHANGED = "unchanged"
    APPLIED = "applied"  # no looser than the one in force: in force now
    PROPOSED = "proposed"  # looser: waits for the companion


class PolicyReloadReply(Reply):
    status: ReloadStatus
    policy_hash: str
    proposed_hash: str | None
    widens: tuple[str, ...]
    request_id: str | None


class AuditEntry(Reply):
    seq: StrictInt
    ts: Seconds
    kind: str
    body: dict[str, Any]  # evidence, one shape per record kind
    hash: str


class AuditTailReply(Reply):
    entries: tuple[AuditEntry, ...]


class AuditVerifyReply(Reply):
    ok: StrictBool
    records: StrictInt
    head_hash: str | None
    problems: tuple[str, ...]


class Tier3LaneJson(Reply):
    asset: str
    targets: tuple[str, ...]
    recipient: str | None
    value_lte: Uint256
    period_amount: Uint256
    period_seconds: StrictInt
    period_start: StrictInt
    expires_at: StrictInt
    call_limit: StrictInt | None
    selectors: tuple[str, ...]
    nonce: Uint256 = 0  # the NonceEnforcer nonce the grant was signed at
    total: Uint256 = 0  # the lifetime cap (native / ERC-20 lanes)
    token_per_tx: Uint256 = 0  # ERC-20 lanes: the per-transaction cap
    token_in: str | None = None  # swap lanes: the router's WETH (ETH in)
    token_out: str | None = None  # swap lanes: the one token bought
    fee: StrictInt = 0  # swap lanes: the pool's fee tier
    # tier3.status adds what the chain says is left, in the signer's words:
    words: str | None = None
    left_in_total: Uint256 | None = None
    total_left_words: str | None = None
    wider_than_policy: str | None = None
    left_in_period: Uint256 | None = None
    disabled: StrictBool | None = None
    period_ends_at: StrictInt | None = None
    calls_left: StrictInt | None = None
    left_words: str | None = None
    error: str | None = None


class Tier3GrantJson(Reply):
    grant_id: str
    chain_id: StrictInt
    account: str
    delegate: str
    status: str
    created_at: Seconds
    delegation_hashes: tuple[str, ...]
    lanes: tuple[Tier3LaneJson, ...]
    delegations: tuple[dict[str, Any], ...] | None = None  # tier3.status: signer.wire.delegation's JSON form
    # tier3.status: why the chain no longer honours the grant (the main account's nonce moved), in words
    ended_on_chain: str | None = None


class Tier3GrantReply(Reply):
    grant: Tier3GrantJson
    replayed: StrictBool = False


class Tier3RevokeReply(Reply):
    revoked: str
    replayed: StrictBool = False


class Tier3OfferReply(Reply):
    """A grant offer for the phone (signer.tier3.grant_offers): signed by the signer's identity key (`signer_sig`)."""

    offer: dict[str, Any]


class Tier3StatusReply(Reply):
    grants: tuple[Tier3GrantJson, ...]


# ---- Tier 1: the companion, through the bridge ----------------------------------------------------


class SignerState(Reply):
    """`approvals.freeze`, `signer.freeze`: the kill switch and the paired devices' revision."""

    frozen: StrictBool
    freeze_id: str | None
    devices_rev: str  # changes whenever a device is paired or revoked
    main_account: str | None


class PendingApproval(Reply):
    seq: StrictInt
    request: dict[str, Any]  # signer.wire.approval_request: hashed as sent, so kept as sent
    request_hash: str


class ApprovalsWaitReply(SignerState):
    requests: tuple[PendingApproval, ...]
    cursor: StrictInt


class ApprovalsStateReply(SignerState):
    """The state plus the main account's nonces, signed (`nonce_sig`), and the signed audit checkpoint."""

    main_nonce: dict[str, StrictInt]
    main_nonce_mined: dict[str, StrictInt]
    ts: Seconds
    nonce_sig: str
    audit_checkpoint: Checkpoint


class HomeReply(Reply):
    """`approvals.home`: what the phone's home screen shows (signer.tier1.home), signed by the signer.
    Amounts in the approval request's shape (`token`, `symbol`, `amount`, `amount_base_units`,
    `decimals`, `price_usd`)."""

    main_account: str | None
    ts: Seconds
    balances: tuple[dict[str, Any], ...]
    spent: tuple[dict[str, Any], ...]
    spent_usd: tuple[dict[str, Any], ...]
    tier3: tuple[dict[str, Any], ...]
    # the signer's identity key over the rest (HOME_VIEW_DOMAIN): the bridge carries it, cannot alter it
    signer_sig: str = ""


class DevicesReply(Reply):
    devices: tuple[DeviceJson, ...]
    devices_rev: str | None = None  # companion.devices (the bridge)
    main_account: str | None = None  # companion.list (the admin)


class PairBeginReply(Reply):
    pairing_id: str
    code: str
    expires_at: Seconds
    signer_key: str


class PairCompleteReply(Reply):
    device: DeviceJson
    main_account: str


class DeviceReply(Reply):
    device: DeviceJson


class PolicyViewReply(Reply):
    """The policy in force for the phone to edit: `signer_sig` is the identity key's over
    `{policy_hash, policy}` (domain `owliabot-policy-view-v1`), so the bridge cannot show another."""

    policy_hash: str
    policy: dict[str, Any]
    signer_sig: str


class PolicyEditReply(Reply):
    """A phone's edits, in force: `loosened` and `widens` are the signer's own judgement of the change."""

    status: Literal["applied"]
    from_hash: str
    policy_hash: str
    loosened: bool
    widens: tuple[str, ...]


# Every method's reply model: the signing client's (sign_replies.SIGN_REPLIES) and the others.
REPLIES: dict[str, type[Reply]] = {
    **SIGN_REPLIES,
    "status": StatusReply,
    "addresses": AddressesReply,
    "balance": BalanceReply,
    "session_key.list": SessionKeysReply,
    "session_key.create": SessionKeyCreateReply,
    "session_key.rotate": SessionKeyRetireReply,
    "session_key.revoke": SessionKeyRetireReply,
    "session_key.topup": TopUpReply,
    "policy.validate": PolicyValidateReply,
    "policy.check": PolicyCheckReply,
    "policy.reload": PolicyReloadReply,
    "audit.tail": AuditTailReply,
    "audit.verify": AuditVerifyReply,
    "tier3.grant": Tier3GrantReply,
    "tier3.revoke": Tier3RevokeReply,
    "tier3.status": Tier3StatusReply,
    "tier3.offer": Tier3OfferReply,
    "tier3.grant_answer": Tier3GrantReply,
    "approvals.wait": ApprovalsWaitReply,
    "approvals.answer": SignReply,
    "approvals.freeze": SignerState,
    "approvals.topup": SignReply,
    "approvals.state": ApprovalsStateReply,
    "approvals.home": HomeReply,
    "signer.freeze": SignerState,
    "companion.pair_begin": PairBeginReply,
    "companion.pair_complete": PairCompleteReply,
    "companion.devices": DevicesReply,
    "companion.list": DevicesReply,
    "companion.revoke": DeviceReply,
    "approvals.revoke_device": DeviceReply,
    "policy.view": PolicyViewReply,
    "policy.edit": PolicyEditReply,
}
