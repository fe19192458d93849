"""The companion's own record of every Tier 3 grant its main key signed (`grants.json`, 0600).

Why: the delegations are salted at random, so without this record only the signer knows them, and
after a host theft the signer is the thief's. With it the owner can, from the companion alone, say
which grants exist, end them on chain (`owlia wallet revoke`: the NonceEnforcer nonce, and
disableDelegation for a delegation without the Nonce caveat), check each is dead and say so in words.
Each entry: chain, manager, NonceEnforcer and RPC URL (so revoke needs no signer home), the main
account, the session key, salt and nonce, each delegation (its hash and signed JSON) and the lanes in
words. The file holds no secret the companion's keystore beside it does not outweigh: a signed
delegation can only be redeemed by the session key it names (Redeemer caveat).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from policies.kernel.files import check_private_file, write_private_file
from signer.wire.delegation import Delegation

RECORD = "grants.json"
VERSION = 1


class RecordError(Exception):
    """The record cannot be read; worded for the owner."""


def load(home: Path) -> list[dict[str, Any]]:
    path = Path(home) / RECORD
    if not path.exists():
        return []
    check_private_file(path)
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        raise RecordError(
            f"{path} is damaged (not JSON): the grants in it cannot be listed; move it aside and "
            "revoke with the NonceEnforcer alone (`owlia wallet revoke` still ends every grant)"
        ) from None
    if (
        not isinstance(data, dict)
        or data.get("version") != VERSION
        or not isinstance(data.get("grants"), list)
    ):
        raise RecordError(f"{path} is not a grant record of version {VERSION}: move it aside")
    return data["grants"]


def _save(home: Path, grants: list[dict[str, Any]]) -> None:
    write_private_file(
        Path(home) / RECORD, json.dumps({"version": VERSION, "grants": grants}, indent=2).encode()
    )


def record_signed(
    home: Path,
    *,
    chain_id: int,
    rpc_url: str,
    manager: str,
    nonce_enforcer: str,
    account: str,
    delegate: str,
    nonce: int,
    salt: int,
    delegations: list[Delegation],
    words: list[str],
) -> None:
    """Written right after signing and before the delegations leave the companion: a grant the
    signer took is always on record here."""
    grants = load(home)
    grants.append(
        {
            "chain_id": chain_id,
            "rpc_url": rpc_url,
            "manager": manager.lower(),
            "nonce_enforcer": nonce_enforcer.lower(),
            "account": account.lower(),
            "delegate": delegate.lower(),
            "nonce": str(nonce),
            "salt": str(salt),
            "signed_at": int(time.time()),
            "delegation_hashes": ["0x" + d.struct_hash().hex() for d in delegations],
            "delegations": [d.to_json() for d in delegations],
            "words": list(words),
            "ended": None,
        }
    )
    _save(home, grants)


def mark_ended(home: Path, chain_id: int, account: str, why: str) -> None:
    """Every recorded grant of `account` on `chain_id` is dead on chain: say why, once."""
    grants = load(home)
    for entry in grants:
        if entry["chain_id"] == chain_id and entry["account"] == account.lower() and entry["ended"] is None:
            entry["ended"] = why
    _save(home, grants)


def for_account(home: Path, chain_id: int, account: str) -> list[dict[str, Any]]:
    return [g for g in load(home) if g["chain_id"] == chain_id and g["account"] == account.lower()]
