"""The signer's wire protocol: JSON-RPC 2.0, one object per line, over a Unix socket.

Shared by the daemon and every client (bot, CLI, skills host) so that all of them speak through
exactly the same validation. Documented in docs/signer-protocol.md. Here: statuses, scopes, error
codes, the amount type and the framing. Each method's params model is signer.wire.requests', a module
of its own: a client that only sends requests (`owlia sign send`) never builds one. Defining them
here cost `owlia sign send` 9-21 ms of CPU (0.13-0.15 s in all; bench/cli_bench.py, paired, 3 runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, StrEnum
from typing import Annotated, Any, Required, TypedDict

from pydantic import BaseModel, BeforeValidator, PlainSerializer
from pydantic_core import to_json

__all__ = [
    "MAX_UINT256",
    "PROTOCOL_VERSION",
    "SCOPE_RANK",
    "ApprovalAction",
    "EncodedResult",
    "ErrorCode",
    "ErrorObject",
    "FreezeAction",
    "KeyStatus",
    "RequestStatus",
    "RpcError",
    "Scope",
    "Uint256",
    "encode_frame",
    "error_frame",
    "request_frame",
    "result_frame",
]

PROTOCOL_VERSION = 1
MAX_UINT256 = 2**256 - 1


class RequestStatus(StrEnum):
    """A signing request's status in the signer's replies (`sign`, `sign.status`, approvals)."""

    SIGNED = "signed"
    PENDING = "pending_approval"
    DENIED = "denied"
    FAILED = "failed"
    EXPIRED = "expired"
    # a signed transaction that left the signer, as its request row records it (signer.receipts):
    UNCONFIRMED = "unconfirmed"  # the node refused it, hid it or its answer was lost: may still be mined
    CONFIRMED = "confirmed"  # a receipt checked against the signer's own hash, status 1
    REVERTED = "reverted"  # the same, status 0: its spend stays counted
    DROPPED = "dropped"  # proven never minable: another of the signer's transactions took its nonce
    APPROVED = "approved"  # a policy change the companion approved: in force, nothing to sign (signer.tier1.policy_live)


class ApprovalAction(StrEnum):
    """A companion's answer to a pending request (`approvals.answer`), as its device signs it."""

    APPROVE = "approve"
    DENY = "deny"
    FREEZE = "freeze"  # deny it and freeze the signer


class FreezeAction(StrEnum):
    """`approvals.freeze` from a paired device."""

    FREEZE = "freeze"
    UNFREEZE = "unfreeze"


class KeyStatus(StrEnum):
    """A session key's status in `session_key.*` and `status` replies."""

    ACTIVE = "active"
    RETIRED = "retired"  # rotated out: keeps no signing power
    REVOKED = "revoked"


class Scope(str, Enum):
    READ = "read"
    SIGN = "sign"
    ADMIN = "admin"
    BRIDGE = "bridge"  # the companion bridge: approval delivery only, outside the read < sign < admin ladder


# BRIDGE ranks below READ, so a bridge token can call nothing in the ladder; bridge methods check
# the scope exactly (signer.methods.bridge_only) instead of by rank.
SCOPE_RANK = {Scope.BRIDGE: -1, Scope.READ: 0, Scope.SIGN: 1, Scope.ADMIN: 2}


class ErrorCode:
    PARSE = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL = -32603
    UNAUTHENTICATED = -32001
    FORBIDDEN = -32002
    TOO_LARGE = -32003
    IDEMPOTENCY_CONFLICT = -32010
    NOT_FOUND = -32011
    UNAVAILABLE = -32020


class ErrorObject(TypedDict, total=False):
    """A JSON-RPC error object as the signer sends it."""

    code: Required[int]
    message: Required[str]
    data: dict[str, Any]  # any JSON object the error carries


class RpcError(Exception):
    """An error the daemon reports to the client. Messages are for humans and carry no secrets."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> ErrorObject:
        err: ErrorObject = {"code": self.code, "message": self.message}
        if self.data:
            err["data"] = self.data
        return err


# ---- value types ------------------------------------------------------------------------------


def _uint256(value: Any) -> int:
    """Amounts are integers in base units: ints or decimal strings, never floats or bools.

    Every amount in every request and reply passes here, so no regex: a decimal string is 1 to 78
    ASCII characters that are all digits (the only ASCII characters `str.isdigit` accepts)."""
    if isinstance(value, bool) or isinstance(value, float):
        raise ValueError("must be an integer in base units (a float or bool is refused)")
    if isinstance(value, str):
        if not (0 < len(value) <= 78 and value.isascii() and value.isdigit()):
            raise ValueError("must be a decimal string of base units")
        value = int(value)
    if not isinstance(value, int):
        raise ValueError("must be an integer in base units")
    if not 0 <= value <= MAX_UINT256:
        raise ValueError("must be between 0 and 2**256-1")
    return value


Uint256 = Annotated[int, BeforeValidator(_uint256), PlainSerializer(str, return_type=str)]


# ---- framing ----------------------------------------------------------------------------------


def encode_frame(obj: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, one line. pydantic-core's encoder: a third of `json.dumps`'s cost for a reply."""
    return to_json(obj) + b"\n"


def request_frame(req_id: int | str, method: str, params: dict[str, Any] | None = None) -> bytes:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id, "method": method}
    if params is not None:
        frame["params"] = params
    return encode_frame(frame)


class EncodedResult(dict[str, Any]):
    """A result whose JSON text was already encoded, by the same encoder as `encode_frame` (the
    outcome a `sign.request` stores): sent as those bytes rather than encoded a second time. It is
    still the dict it was encoded from, for code in the process that reads it."""

    __slots__ = ("json",)

    def __init__(self, result: Mapping[str, object], encoded: bytes) -> None:
        super().__init__(result)
        self.json = encoded


def result_frame(req_id: Any, result: Any) -> bytes:
    """A reply model (signer.wire.replies) is sent as its handler set it: unset optional fields absent."""
    if type(result) is EncodedResult:
        body = result.json
    elif isinstance(result, BaseModel):
        body = result.__pydantic_serializer__.to_json(result, exclude_unset=True)
    else:
        return encode_frame({"jsonrpc": "2.0", "id": req_id, "result": result})
    return b'{"jsonrpc":"2.0","id":' + to_json(req_id) + b',"result":' + body + b"}\n"


def error_frame(req_id: Any, error: RpcError) -> bytes:
    return encode_frame({"jsonrpc": "2.0", "id": req_id, "error": error.to_json()})
