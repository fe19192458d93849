"""Local administration done directly on the signer's database, as the signer's user.

Client tokens are managed here rather than over RPC: whoever can open the signer home is already
the signer, and an RPC path would be one more thing a stolen token could try. Every command here
unlocks the keystore with the passphrase first: a client row carries a MAC under a key derived
from the master key (signer.store.integrity), and the audit chain is keyed, so nothing can write
either without it.

What this writes (the `clients` table and the audit log) is stamped with the signer's time as
estimated from the clock the daemon saved (`signer.clock.estimate`), not with this process's system
clock: so a token's expiry is measured on the clock the daemon judges it by, and a CLI run with the
system clock stepped far ahead neither stamps the far future nor lives that much longer. Nothing
written here feeds the daemon's clock (`signer.clock.latest_recorded` reads only what the daemon
writes), so the CLI cannot move it either way.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

from policies.kernel.passphrase import zeroize
from signer.auth import Client, add_client, revoke_client
from signer.clock import estimate
from signer.keystore import unlock
from signer.store.approvals import freeze
from signer.store.audit import (
    KEYED_KIND,
    AuditLog,
    all_records,
    has_record_of_kind,
    load_anchor,
    records_of_kinds,
)
from signer.store.db import Connection, delete_meta, set_meta, write_transaction
from signer.store.devices import revoke_device
from signer.store.guard import Unlocked, went_back
from signer.store.integrity import DIGEST_ONLY, PROTECTED, Finding, FindingJson, Problem, delete_row
from signer.store.session_keys import ids_not_in_status
from signer.store.state_head import AUDIT, STATE
from signer.tier1 import policy_change
from signer.tier1.policy_live import read_policy_file
from signer.tier2.session_keys import REVOKED
from signer.wire.protocol import Scope
from signer.wire.settings import SignerPaths

T = TypeVar("T")


def _unlocked(paths: SignerPaths, passphrase: bytearray) -> Unlocked:
    if not paths.db.exists():
        raise FileNotFoundError(f"no signer database at {paths.db}: run `owlia signer init` first")
    try:
        with unlock(paths.home, passphrase) as master:
            return Unlocked.from_master(master)
    finally:
        zeroize(passphrase)


def _audited(
    paths: SignerPaths,
    passphrase: bytearray,
    kind: str,
    body: dict[str, Any] | Callable[[T], dict[str, Any]],
    action: Callable[[Connection, float, Unlocked], T],
) -> T:
    """Run a change and its audit record in one transaction, then move the anchor.

    `action` gets the connection, the signer's estimated time (read inside the transaction) and
    the keys; `body` may be a function of its result."""
    keys = _unlocked(paths, passphrase)
    conn = keys.connect(paths.db)
    try:
        with write_transaction(conn):
            now = estimate(conn)
            audit = keys.audit_log(conn, paths.anchor, clock=lambda: now)
            result = action(conn, now, keys)
            audit.reload()  # the action may have appended records of its own
            audit.append(kind, body(result) if callable(body) else body)
            anchor = load_anchor(paths.anchor, keys.audit_keys)  # the epoch never goes below the anchor's
            audit.bind_state(floor=anchor.epoch if anchor is not None and anchor.authentic else 0)
        audit.write_anchor()
        audit.close()
        return result
    finally:
        conn.close()


def issue_client(
    paths: SignerPaths, name: str, scope: Scope, ttl_seconds: int | None = None, *, passphrase: bytearray
) -> tuple[Client, str]:
    return _audited(
        paths,
        passphrase,
        "client.added",
        {"name": name, "scope": scope.value, "ttl_seconds": ttl_seconds},
        lambda conn, now, _: add_client(conn, name, scope, ttl_seconds=ttl_seconds, now=now),
    )


def revoke(paths: SignerPaths, name: str, *, passphrase: bytearray) -> bool:
    return _audited(
        paths,
        passphrase,
        "client.revoked",
        {"name": name},
        lambda conn, now, _: revoke_client(conn, name, now=now),
    )


# ---- integrity: what the daemon refuses at start, and the operator's way out ------------------


def check_integrity(paths: SignerPaths, *, passphrase: bytearray) -> list[Finding]:
    keys = _unlocked(paths, passphrase)
    conn = keys.connect(paths.db)
    try:
        return keys.check(conn, paths.anchor)
    finally:
        conn.close()


class RollbackAccepted(TypedDict):
    """What accepting a state that went back withdrew (`_accept_rollback`)."""

    frozen: bool
    session_keys_revoked: list[str]
    clients_revoked_again: list[str]
    devices_revoked_again: list[str]


class SealJson(TypedDict):
    findings: list[FindingJson]
    removed: list[str]
    sealed_rows: int
    legacy_audit_records: int
    accepted_policy_hash: str | None
    rollback_accepted: RollbackAccepted | None


@dataclass
class SealResult:
    findings: list[Finding]
    removed: list[str] = field(default_factory=list)
    sealed_rows: int = 0
    legacy_audit_records: int = 0
    accepted_policy_hash: str | None = None
    rollback_accepted: RollbackAccepted | None = None  # what `_accept_rollback` re-applied

    def to_json(self) -> SealJson:
        return {
            "findings": [f.to_json() for f in self.findings],
            "removed": self.removed,
            "sealed_rows": self.sealed_rows,
            "legacy_audit_records": self.legacy_audit_records,
            "accepted_policy_hash": self.accepted_policy_hash,
            "rollback_accepted": self.rollback_accepted,
        }


class SealRefused(ValueError):
    pass


_POLICY_KEYS = frozenset({policy_change.ACCEPTED, "policy_hash"})
_KILL_SWITCH_KEYS = frozenset({"frozen", "freeze_id"})


def seal(
    paths: SignerPaths,
    *,
    passphrase: bytearray,
    accept_policy_file: bool = False,
    accept_ledger: bool = False,
    accept_rollback: bool = False,
) -> SealResult:
    """The operator's answer to what the daemon refused (and the upgrade of a home from before row MACs).

    Rows that fail are removed, so they grant nothing: a client, device, session key, pairing,
    approval or recipient edited or added offline is gone. A changed spend ledger (kept by its digest
    alone) is refused unless `accept_ledger`: it cannot be repaired row by row. The saved clock is dropped (the daemon resumes from
    its records). A kill-switch flag that fails leaves the signer frozen: only the companion lifts
    it. A policy in force that fails, or a `meta` table short of rows, is refused unless the
    operator names the policy file as the policy in force (`accept_policy_file`): nothing else here
    can tell which policy the companion last approved. State that went back to an earlier copy of
    itself (signer.store.state_head) is refused unless `accept_rollback`: see `_accept_rollback`.
    Then every remaining row is sealed as it is and, if the audit log predates the keyed chain, an
    `audit.keyed` record seals its prefix."""
    text, policy = read_policy_file(paths.policy) if accept_policy_file else (None, None)

    def action(conn: Connection, now: float, keys: Unlocked) -> SealResult:
        result = SealResult(keys.check(conn, paths.anchor))
        back = went_back(result.findings)
        if back and not accept_rollback:
            raise SealRefused(
                f"signer.db (or its audit log) went back to an earlier state ({_names(back)}); nothing "
                "was changed. Restore the latest backup of signer.db together with audit.anchor. If "
                "this is the state you want to keep, run again with --accept-rollback: the signer is "
                "then frozen (only your companion lifts it), every session key is revoked, and every "
                "client and companion device the audit log records as revoked is revoked again"
            )
        # An unsealed table (an upgrade) is sealed as it is: the operator running this is the authority.
        failing_meta = {
            f.pk for f in result.findings if f.table == "meta" and f.problem is not Problem.UNSEALED
        }
        ledger = sorted(
            {f.table for f in result.findings if f.table in DIGEST_ONLY and f.problem is Problem.CHANGED}
        )
        if ledger and not accept_ledger:
            raise SealRefused(
                f"the spend ledger ({', '.join(ledger)}) was changed without the master key and cannot "
                "be repaired row by row; nothing was changed. Restore signer.db from a backup, or "
                "accept the ledger as it is with --accept-ledger (check `owlia audit verify` first: "
                "the keyed audit log records every spend)"
            )
        if (failing_meta & _POLICY_KEYS or None in failing_meta) and not accept_policy_file:
            raise SealRefused(
                "the policy in force (or a row of `meta`) fails authentication; nothing was changed. "
                "Put the policy you want in force in policy.yaml and run again with "
                "--accept-policy-file"
            )
        for finding in result.findings:
            if finding.table not in PROTECTED or finding.pk is None or finding.problem is Problem.DELETED:
                continue
            if finding.table == "meta" and finding.pk in _KILL_SWITCH_KEYS:
                continue  # rewritten below: frozen
            delete_row(conn, finding.table, finding.pk)
            result.removed.append(str(finding))
        if failing_meta & _KILL_SWITCH_KEYS or None in failing_meta:
            set_meta(conn, "frozen", "1")  # fail closed: the companion's unfreeze is the way back
        if accept_policy_file and (failing_meta & _POLICY_KEYS or None in failing_meta):
            assert text is not None and policy is not None
            set_meta(conn, policy_change.ACCEPTED, text)
            delete_meta(conn, "policy_hash")  # the next start records a policy.loaded
            result.accepted_policy_hash = policy.policy_hash()
        if back:
            result.rollback_accepted = _accept_rollback(conn, now)
        result.sealed_rows = keys.sealer.seal(conn)
        result.legacy_audit_records = _legacy_prefix(conn, keys)
        if result.legacy_audit_records:
            AuditLog(conn, paths.anchor, clock=lambda: now, keys=keys.audit_keys).append(
                KEYED_KIND, {"legacy_records": result.legacy_audit_records}
            )
        return result

    return _audited(
        paths,
        passphrase,
        "integrity.sealed",
        lambda r: {
            "removed": r.removed,
            "sealed_rows": r.sealed_rows,
            "accepted_policy_hash": r.accepted_policy_hash,
            "rollback_accepted": r.rollback_accepted,
        },
        action,
    )


def _names(findings: list[Finding]) -> str:
    return ", ".join(
        sorted(
            {
                "the audit log" if f.table == AUDIT else "the state record" if f.table == STATE else f.table
                for f in findings
            }
        )
    )


def _accept_rollback(conn: Connection, now: float) -> RollbackAccepted:
    """Keep a state that went back, taking away what an earlier state could have given back.

    Nobody can tell row by row what the earlier copy restored, so everything it could have restored
    that grants authority is withdrawn: the signer is frozen (only a paired device's signed unfreeze
    lifts it), every session key is revoked, and every client and companion device the keyed audit
    log records as revoked is revoked again. Room under a spending limit cannot be withdrawn this
    way; while frozen nothing is signed, and the companion decides when to lift it."""
    revoked_keys = ids_not_in_status(conn, REVOKED.value)
    freeze(conn, "frz_" + secrets.token_hex(8), revoked_keys, now, REVOKED.value)
    clients, devices = [], []
    for _, kind, body in records_of_kinds(conn, ("client.revoked", "companion.revoked")):
        record = json.loads(body)
        if kind == "client.revoked" and revoke_client(conn, str(record.get("name")), now=now):
            clients.append(str(record.get("name")))
        elif kind == "companion.revoked" and revoke_device(conn, str(record.get("device_id")), now):
            devices.append(str(record.get("device_id")))
    return {
        "frozen": True,
        "session_keys_revoked": revoked_keys,
        "clients_revoked_again": clients,
        "devices_revoked_again": devices,
    }


def _legacy_prefix(conn: Connection, keys: Unlocked) -> int:
    """How many unkeyed records open the log (a home from before the keyed chain), unless a seal names them."""
    if has_record_of_kind(conn, KEYED_KIND):
        return 0
    count = 0
    for row in all_records(conn):
        if hmac.compare_digest(keys.audit_keys.record_hash(*row[:5]), row[5]):
            break
        count += 1
    return count


__all__ = ["SealRefused", "SealResult", "check_integrity", "issue_client", "revoke", "seal"]
