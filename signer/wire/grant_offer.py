"""A Tier 3 grant as a device holding the main key receives it: words, unsigned delegations, and the
EIP-712 document of each. One definition for the CLI companion and the signer's phone path
(signer.tier3.grant_offers), so both offer the same bytes to sign."""

from __future__ import annotations

from typing import Any

from signer.wire.grants import Lane

__all__ = ["grant_offer"]


def grant_offer(
    lanes: list[Lane],
    words: list[str],
    *,
    session_address: str,
    delegator: str,
    chain_id: int,
    manager: str,
    enforcers: dict[str, str],
    salt: int,
) -> dict[str, Any]:
    """JSON-safe: uint256 values as decimal strings; `typed_data[i]` is the eth_signTypedData_v4 document
    whose digest is `delegations[i]`'s signing digest."""
    unsigned = [
        lane.delegation(delegate=session_address, delegator=delegator, salt=salt + i, enforcers=enforcers)
        for i, lane in enumerate(lanes)
    ]
    return {
        "kind": "tier3.grant_offer",
        "chain_id": chain_id,
        "manager": manager.lower(),
        "words": list(words),
        "delegations": [d.to_json() for d in unsigned],
        "typed_data": [d.typed_data(chain_id, manager) for d in unsigned],
    }
