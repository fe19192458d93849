"""The signer's request models: each method's params, validated by the daemon before a handler runs.

Part of the wire protocol (signer.wire.protocol, docs/signer-protocol.md), in a module of their own
so that a client that only sends requests (`owlia sign send`) does not define 22 pydantic classes
and load the address checks they use: 9-21 ms of its CPU (bench/cli_bench.py, paired, 3 runs of 15).
Import them from here (signer.wire.protocol does not re-export them).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    FiniteFloat,
    PlainSerializer,
    StrictInt,
    model_validator,
)

from policies.kernel.addresses import case_ok, is_address
from policies.kernel.text import display_safe
from signer.wire.protocol import ApprovalAction, FreezeAction, Uint256

__all__ = [
    "Tier3OfferParams",
    "Tier3AnswerParams",
    "IDEMPOTENCY_KEY_RE",
    "Address",
    "ApprovalAnswerParams",
    "ApprovalsWaitParams",
    "AuditTailParams",
    "AuthParams",
    "BalanceParams",
    "DeviceId",
    "DeviceRefParams",
    "DeviceRevokeParams",
    "FreezeParams",
    "Hex64",
    "HexData",
    "Intent",
    "PairBeginParams",
    "PairCompleteParams",
    "PolicyCheckParams",
    "PolicyEdit",
    "PolicyEditParams",
    "LimitEdit",
    "BookAdd",
    "BookRename",
    "BookRemove",
    "PolicyValidateParams",
    "SessionKeyCreateParams",
    "SessionKeyRefParams",
    "SignRequestParams",
    "SignStatusParams",
    "Signature",
    "StateParams",
    "Strict",
    "Tier3GrantParams",
    "Tier3RevokeParams",
    "TokenTransfer",
    "TopUpParams",
    "TopUpRequestParams",
]

IDEMPOTENCY_KEY_RE = re.compile(r"^[A-Za-z0-9._:\-]{8,128}$")


# ---- value types ------------------------------------------------------------------------------


def _address(value: Any) -> str:
    if not is_address(value):
        raise ValueError("must be a 0x-prefixed 20-byte hex address")
    body = value[2:]
    if not case_ok(value):
        raise ValueError("has a bad EIP-55 checksum (mixed case that does not match): check for a typo")
    return "0x" + body.lower()


def _hex_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str) or not re.fullmatch(r"0x([0-9a-fA-F]{2})*", value):
        raise ValueError("must be 0x-prefixed hex with an even number of digits")
    return bytes.fromhex(value[2:])


Address = Annotated[str, BeforeValidator(_address)]
HexData = Annotated[
    bytes, BeforeValidator(_hex_bytes), PlainSerializer(lambda b: "0x" + b.hex(), return_type=str)
]


class Strict(BaseModel):
    # defer_build: a model's validator is built on its first use, not on import, so a command that
    # sends one request (`owlia sign send`) does not build all 22 on import (about 25 ms).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# ---- requests ---------------------------------------------------------------------------------


class TokenTransfer(Strict):
    token: Address
    recipient: Address
    amount: Uint256


class Intent(Strict):
    """A transaction intent. The signer turns it into a raw call and decodes that itself."""

    chain_id: StrictInt = Field(gt=0, lt=2**63)  # strict: JSON `true` would be chain 1
    to: Address | None = None
    value: Uint256 = 0
    data: HexData = b""
    token_transfer: TokenTransfer | None = None
    # Present only so that a request carrying one is recorded and refused, never silently dropped.
    authorization_list: list[Any] | None = None
    flags: list[str] = Field(default_factory=list, max_length=8)

    @model_validator(mode="after")
    def _one_shape(self) -> Intent:
        if (self.to is None) == (self.token_transfer is None):
            raise ValueError("give exactly one of `to` (a raw call) or `token_transfer`")
        if self.token_transfer is not None and (self.value or self.data):
            raise ValueError("a token_transfer carries no `value` or `data` of its own")
        return self


class SignRequestParams(Strict):
    idempotency_key: str = Field(pattern=IDEMPOTENCY_KEY_RE.pattern)
    intent: Intent
    # The agent's words, unverified. Shown on the approval screen, so no control characters: an ESC
    # sequence could rewrite the decoded recipient shown above it.
    reason: Annotated[str, AfterValidator(display_safe)] | None = Field(default=None, max_length=2000)
    source: str = Field(default="agent", pattern=r"^[a-z][a-z0-9_.:\-]{0,63}$")


class SignStatusParams(Strict):
    request_id: str = Field(pattern=r"^req_[0-9a-f]{32}$")


class AuthParams(Strict):
    token: str = Field(min_length=10, max_length=256)


class BalanceParams(Strict):
    chain_id: StrictInt = Field(gt=0)
    address: Address | None = None
    token: Address | None = None


class SessionKeyCreateParams(Strict):
    idempotency_key: str = Field(pattern=IDEMPOTENCY_KEY_RE.pattern)
    chain_id: StrictInt = Field(gt=0)
    ttl_seconds: int | None = Field(default=None, ge=60)
    balance_cap: Uint256 | None = None


class SessionKeyRefParams(Strict):
    idempotency_key: str = Field(pattern=IDEMPOTENCY_KEY_RE.pattern)
    key_id: str = Field(pattern=r"^sk_[0-9a-f]{16}$")


class Tier3GrantParams(Strict):
    """A grant signed by the main key (signer.wire.delegation's JSON form), one delegation per lane."""

    idempotency_key: str = Field(pattern=IDEMPOTENCY_KEY_RE.pattern)
    chain_id: int = Field(gt=0)
    delegations: list[dict[str, Any]] = Field(min_length=1, max_length=16)


class Tier3RevokeParams(Strict):
    idempotency_key: str = Field(pattern=IDEMPOTENCY_KEY_RE.pattern)
    grant_id: str = Field(pattern=r"^gr_[0-9a-f]{16}$")


class TopUpParams(Strict):
    idempotency_key: str = Field(pattern=IDEMPOTENCY_KEY_RE.pattern)
    key_id: str = Field(pattern=r"^sk_[0-9a-f]{16}$")
    amount: Uint256 | None = None  # default: up to the cap


class PolicyValidateParams(Strict):
    text: str = Field(max_length=256 * 1024)


class PolicyCheckParams(Strict):
    intent: Intent


class AuditTailParams(Strict):
    n: int = Field(default=20, ge=1, le=1000)
    kind: str | None = None


class ApprovalsWaitParams(Strict):
    after: int = Field(default=0, ge=0)  # the last approval seq the bridge holds
    timeout: float = Field(default=25.0, ge=0, le=55)
    limit: int = Field(default=200, ge=1, le=1000)


Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
DeviceId = Annotated[str, Field(pattern=r"^dev_[0-9a-f]{16}$")]
Signature = Annotated[str, Field(pattern=r"^[0-9a-f]{128}$")]


class ApprovalAnswerParams(Strict):
    """A companion's answer, carried by the bridge. The signer verifies all of it itself."""

    request_id: str = Field(pattern=r"^req_[0-9a-f]{32}$")
    request_hash: Hex64
    device_id: DeviceId
    action: ApprovalAction
    expires_at: FiniteFloat
    signature: Signature
    raw_tx: HexData = b""  # approve only: the EIP-1559 tx signed by the main key
    note: str | None = Field(default=None, max_length=500)


class StateParams(Strict):
    """`approvals.state`: `witness_seq` is the record count of the audit checkpoint the companion holds;
    the signer then signs, inside its new checkpoint, the hash its log has at that record."""

    witness_seq: int | None = Field(default=None, ge=0, le=2**62)


class FreezeParams(Strict):
    """Freeze or unfreeze the signer from a paired device (unfreeze must name the current freeze id)."""

    device_id: DeviceId
    action: FreezeAction
    freeze_id: str = Field(default="", pattern=r"^(frz_[0-9a-f]{16})?$")
    ts: FiniteFloat  # NaN would slip past every freshness comparison
    signature: Signature


class PairBeginParams(Strict):
    ttl_seconds: int = Field(default=600, ge=30, le=3600)
    name: str = Field(default="companion", pattern=r"^[A-Za-z0-9 ._\-]{1,40}$")


class PairCompleteParams(Strict):
    pairing_id: str = Field(pattern=r"^pair_[0-9a-f]{16}$")
    device_pub: Hex64
    name: str = Field(pattern=r"^[A-Za-z0-9 ._\-]{1,40}$")
    main_address: Address
    ts: FiniteFloat
    nonce: Hex64
    signature: Signature
    mac: Hex64


class DeviceRefParams(Strict):
    device_id: DeviceId


class DeviceRevokeParams(Strict):
    """Revoke a paired device (another, or itself) on a paired device's signed, single-use word."""

    device_id: DeviceId  # the device that signs
    target_device_id: DeviceId
    ts: FiniteFloat
    signature: Signature


class TopUpRequestParams(Strict):
    """Ask the companion to fund a session key from the main account (Tier 1), up to its cap."""

    device_id: DeviceId
    key_id: str = Field(pattern=r"^sk_[0-9a-f]{16}$")
    amount: Uint256 | None = None
    ts: FiniteFloat
    signature: Signature


class Tier3OfferParams(Strict):
    """A paired device asks the signer for a Tier 3 grant offer to sign with the main key (the phone path);
    `rotate` retires the current session key first and offers the grant to its successor."""

    device_id: DeviceId
    chain_id: int = Field(gt=0, lt=2**63)
    days: int = Field(ge=1, le=365)
    rotate: bool = False
    ts: FiniteFloat
    signature: Signature


class Tier3AnswerParams(Strict):
    """The main key's EIP-712 signatures over an offer's delegations, one per delegation, in order."""

    device_id: DeviceId
    offer_id: str = Field(pattern=r"^off_[0-9a-f]{16}$")
    offer_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    signatures: list[Annotated[str, Field(pattern=r"^0x[0-9a-f]{130}$")]] = Field(min_length=1, max_length=16)
    ts: FiniteFloat
    signature: Signature


# ---- policy edits from the phone (signer.tier1.policy_edit) ---------------------------------------------

LowerAddress = Annotated[str, Field(pattern=r"^0x[0-9a-f]{40}$")]  # as signed: one spelling only
BookName = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(display_safe)]


class LimitEdit(Strict):
    """Set (or, with `amount` null, remove) an asset's per-transaction limit or one window's limit."""

    op: Literal["limit"]
    chain: StrictInt = Field(gt=0, lt=2**63)
    asset: str = Field(pattern=r"^(native|0x[0-9a-f]{40})$")
    limit: str = Field(pattern=r"^(per_tx|[1-9][0-9]{0,5}[smhdw])$")  # per_tx or a window's label
    amount: str | None = Field(pattern=r"^[0-9]{1,78}(\.[0-9]{1,77})?$")


class BookAdd(Strict):
    op: Literal["book_add"]
    chain: StrictInt = Field(gt=0, lt=2**63)
    address: LowerAddress
    name: BookName


class BookRename(Strict):
    op: Literal["book_rename"]
    chain: StrictInt = Field(gt=0, lt=2**63)
    address: LowerAddress
    name: BookName


class BookRemove(Strict):
    op: Literal["book_remove"]
    chain: StrictInt = Field(gt=0, lt=2**63)
    address: LowerAddress


PolicyEdit = Annotated[LimitEdit | BookAdd | BookRename | BookRemove, Field(discriminator="op")]


class PolicyEditParams(Strict):
    """A paired device's edits to the policy it was shown (`base_hash`). The device key signs them
    (domain `owliabot-policy-edit-v1`, single use); a loosening also carries the main key's EIP-191
    signature over the same bytes, which only the passkey (or the key's passphrase) unlocks on the phone.
    Whether it loosens is the signer's call, from the policies before and after."""

    device_id: DeviceId
    base_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    edits: list[PolicyEdit] = Field(min_length=1, max_length=32)
    ts: FiniteFloat
    signature: Signature
    main_signature: str | None = Field(default=None, pattern=r"^0x[0-9a-f]{130}$")
