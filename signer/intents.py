"""A client's intent reduced to the bytes the signer decides on, and its idempotency hash.

The signer never trusts a description: a token transfer becomes ERC-20 calldata built here, and
the source (agent, skill, heartbeat) becomes flags the policy reads.
"""

from __future__ import annotations

import hashlib
import json

from policies.decode import encode_erc20_transfer
from policies.intent import Call, Flag
from signer.wire.requests import Intent, SignRequestParams


def request_hash(params: SignRequestParams) -> str:
    """sha256 of the validated params as pydantic serializes them: fields in declaration order,
    values normalized by the validators, so the same request always hashes the same."""
    return hashlib.sha256(params.__pydantic_serializer__.to_json(params)).hexdigest()


def legacy_request_hash(params: SignRequestParams) -> str:
    """Requests recorded by earlier releases hashed sorted-key JSON: kept so their keys still replay."""
    body = json.dumps(params.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def intent_to_call(intent: Intent, source: str) -> Call:
    """Reduce an intent to raw bytes; a token transfer becomes ERC-20 calldata built here."""
    flags = {Flag(f) for f in intent.flags if f in Flag._value2member_map_}
    if source.startswith(("skill", "mcp.")):  # third-party code: a skill or an MCP server
        flags.add(Flag.FROM_SKILL)
    if source == "heartbeat":
        flags.add(Flag.FROM_HEARTBEAT)
    if intent.token_transfer is not None:
        tt = intent.token_transfer
        to, value, data = tt.token, 0, encode_erc20_transfer(tt.recipient, tt.amount)
    else:
        assert intent.to is not None
        to, value, data = intent.to, intent.value, intent.data
    return Call(
        chain_id=intent.chain_id,
        to=to,
        value=value,
        data=data,
        flags=frozenset(flags),
        authorization_list=intent.authorization_list is not None,
    )
