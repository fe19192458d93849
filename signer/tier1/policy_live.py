"""The policy in force, and how it changes while the signer runs.

`reload()` (SIGHUP, `owlia signer reload`, the admin method `policy.reload`) reads the policy
file again. A change that only tightens is applied at once; one that could widen what the signer
signs on its own keeps the policy in force and opens a Tier 1 request, and the companion's
approval installs it at once (`install_approved`). Unknown kinds of change count as widening
(`signer.tier1.policy_change`).

Installing is durable first, then in memory: the accepted text and a `policy.loaded` record with
the whole policy (so every later decision can be replayed from the log) commit before the swap,
and the swap is one synchronous step on the event loop, like every decision: a request is decided
wholly under the old policy or wholly under the new one. A longer spend window than any loaded so
far first pulls the older spends into the ledger, so a new 30 d limit never starts out blind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from policies.decision import Decision, Finding, Outcome
from policies.kernel.files import PermissionProblem, check_private_file, write_private_file
from policies.loader import PolicyError, parse_policy
from policies.model import Policy
from signer import records
from signer.ledger import DAY, Ledger
from signer.store import approvals as approval_store, requests as request_store
from signer.store.audit import AuditLog
from signer.store.db import get_meta, set_meta
from signer.store.requests import Connection
from signer.tier1 import policy_change
from signer.tier1.policy_change import StalePolicy
from signer.wire.approval_request import ApprovalRequestBody, escalation_json

if TYPE_CHECKING:
    from signer.tier1.port import Escalations, SigningCore

log = logging.getLogger("owlia.signer")

Status = Literal["unchanged", "applied", "proposed"]


@dataclass(frozen=True)
class Proposal:
    """A policy file that loosens the one in force: it waits for the companion."""

    text: str
    policy_hash: str
    widens: list[str]


@dataclass(frozen=True)
class ReloadResult:
    status: Status
    policy_hash: str
    """The policy in force after the reload."""
    proposed_hash: str | None = None
    widens: list[str] = field(default_factory=list)
    request_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_policy_file(path: Path) -> tuple[str, Policy]:
    """The file's text and the policy parsed from that very text; a file others can write, or one
    that cannot be read or does not validate, is a PolicyError naming it."""
    try:
        check_private_file(path)
        text = path.read_text(encoding="utf-8")
    except PermissionProblem as exc:
        raise PolicyError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: cannot read policy file: {exc}") from None
    try:
        return text, parse_policy(text)
    except PolicyError as exc:
        raise PolicyError(f"{path}: {exc}") from None


def ledger_horizon(policy: Policy) -> int:
    return max(policy.window_seconds() | {DAY})


def load_ledger(
    conn: Connection, since: float, ledger: Ledger | None = None, until: float | None = None
) -> Ledger:
    """Rebuild the in-memory windows from the durable rows in (since, until]; released spends stay
    released. `until` extends an existing ledger backwards without touching what it holds."""
    first_load = until is None
    ledger = ledger if ledger is not None else Ledger()
    until = float("inf") if until is None else until
    for request_id, chain_id, asset, amount, usd, ts in request_store.spends_between(conn, since, until):
        if not ledger.holds(request_id):  # held ones were counted in full at the first load
            ledger.add_spend(request_id, chain_id, asset, int(amount), None if usd is None else int(usd), ts)
    for request_id, ts in request_store.counted_signs_between(conn, since, until):
        ledger.add_tx(request_id, ts)
    if first_load:
        hold_in_flight(conn, since, ledger)
        for chain_id, address, ts, request_id in request_store.recipients(conn):
            ledger.add_recipient(chain_id, address, ts, request_id)
    return ledger


def hold_in_flight(conn: Connection, since: float, ledger: Ledger) -> None:
    """Spends of transactions that left the signer and are not proven mined or dead count in every
    window however old (signer.receipts): those stamped before `since` are added too, and all held."""
    held: dict[str, tuple[float, list[tuple[int, str, int, int | None]]]] = {}
    for request_id, chain_id, asset, amount, usd, ts in request_store.in_flight_spends(conn):
        usd_micros = None if usd is None else int(usd)
        if ts <= since:  # not in the windows' rows loaded above
            ledger.add_spend(request_id, chain_id, asset, int(amount), usd_micros, ts)
        held.setdefault(request_id, (ts, []))[1].append((chain_id, asset, int(amount), usd_micros))
    for request_id, (ts, spends) in held.items():
        ledger.hold(request_id, ts, spends)


class PolicyKeeper:
    """Owns which policy is in force: at start, on reload and when the companion approves one."""

    def __init__(
        self,
        path: Path,
        reader: Connection,
        file_text: str,
        file_policy: Policy,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.reader = reader
        self.clock = clock
        self.policy, self.text, self.proposal = self._in_force(file_text, file_policy)
        self.ledger_since = self.clock() - ledger_horizon(self.policy)
        self.engine: SigningCore | None = None
        self.approvals: Escalations | None = None
        self._ledger: Ledger | None = None  # the one `ledger()` built for the engine
        self._changing = asyncio.Lock()  # one change of policy at a time, each judged against the last

    def _in_force(self, file_text: str, file_policy: Policy) -> tuple[Policy, str, Proposal | None]:
        """The file's policy, unless it loosens the last accepted one: then the accepted one stays."""
        accepted_text = get_meta(self.reader, policy_change.ACCEPTED)
        if accepted_text is None:
            return (
                file_policy,
                file_text,
                None,
            )  # first start with this home: the installed policy is the baseline
        accepted = parse_policy(accepted_text)
        widens = self._widenings(accepted, file_policy)
        if not widens:
            return file_policy, file_text, None
        return accepted, accepted_text, Proposal(file_text, file_policy.policy_hash(), widens)

    @staticmethod
    def _widenings(current: Policy, new: Policy) -> list[str]:
        if current.policy_hash() == new.policy_hash():
            return []
        widens = policy_change.widenings(current, new)
        if widens:
            log.warning(
                "the policy file loosens the policy in force; keeping it until the companion approves: %s",
                "; ".join(widens),
            )
        return widens

    def ledger(self) -> Ledger:
        """The spend windows, rebuilt from the records: the engine decides with this one, and a
        policy with a longer window extends it backwards before it is installed."""
        self._ledger = load_ledger(self.reader, self.ledger_since)
        return self._ledger

    def record_start(self, conn: Connection, audit: AuditLog) -> None:
        """Inside the start-up transaction: remember what is in force and log it if it is new."""
        policy_hash = self.policy.policy_hash()
        if self.proposal is None:
            set_meta(conn, policy_change.ACCEPTED, self.text)
        if get_meta(conn, "policy_hash") != policy_hash:
            self._record_loaded(conn, audit, "start", self.policy)

    def _record_loaded(self, conn: Connection, audit: AuditLog, why: str, policy: Policy) -> None:
        audit.append(
            "policy.loaded",
            {"policy_hash": policy.policy_hash(), "policy": policy.model_dump(mode="json"), "why": why},
        )
        set_meta(conn, "policy_hash", policy.policy_hash())

    # ---- changes while running --------------------------------------------------------------

    async def reload(self) -> ReloadResult:
        """Read the file again: tighten now, propose a loosening, or do nothing. A file that does not
        validate (or is not private) changes nothing and raises PolicyError."""
        async with self._changing:  # compared with the policy in force when it is installed, not before
            text, new = read_policy_file(self.path)
            current = self.policy.policy_hash()
            if new.policy_hash() == current:
                return ReloadResult("unchanged", current)
            widens = self._widenings(self.policy, new)
            if widens:
                request_id = await self.propose(Proposal(text, new.policy_hash(), widens))
                return ReloadResult("proposed", current, new.policy_hash(), widens, request_id)
            await self._install(text, new, "reload: tightened", extra=None)
            return ReloadResult("applied", new.policy_hash())

    async def install_approved(
        self, text: str, from_hash: str, commit_approval: Callable[[Connection], None]
    ) -> None:
        """Install a loosening the companion approved, in the same commit that closes the approval,
        only over the policy it was proposed against (StalePolicy otherwise: nothing is written)."""
        async with self._changing:
            if self.policy.policy_hash() != from_hash:
                raise StalePolicy(
                    "the policy in force changed since this loosening was proposed; "
                    "reload the signer's policy to propose it again"
                )
            await self._install(text, parse_policy(text), "approved on the companion", extra=commit_approval)

    async def install_edited(
        self, base_hash: str, judge: Callable[[Policy, str], tuple[Policy, str, dict[str, Any]]]
    ) -> dict[str, Any]:
        """Install edits made on the phone over the policy `base_hash` (signer.tier1.policy_edit): `judge`
        builds the new policy, its file text and its audit record from the policy in force and the file's
        text (kept but for the edits: signer.tier1.policy_text), or raises
        EditRefused. Refused (StalePolicy) unless `base_hash` is in force and the file on disk is it
        too (a change there waits for a reload or the companion: it is never overwritten). The file
        is replaced atomically first: a crash before the commit leaves a file the next start judges
        like any edit (a loosening waits for the companion)."""
        async with self._changing:
            current = self.policy.policy_hash()
            if base_hash != current:
                raise StalePolicy(
                    f"your phone showed policy {base_hash[:12]}, but the policy in force is now "
                    f"{current[:12]}: nothing was changed. Look at the limits again and redo the change."
                )
            try:
                on_disk_text, on_disk = read_policy_file(self.path)
            except PolicyError as exc:
                raise StalePolicy(f"the policy file cannot be read, nothing was changed: {exc}") from None
            if on_disk.policy_hash() != current:
                raise StalePolicy(
                    "the policy file on the signer's machine has changes that are not in force yet "
                    "(run owlia signer reload there, or answer the loosening it proposed): nothing was changed"
                )
            new, text, record = judge(self.policy, on_disk_text)
            await asyncio.to_thread(write_private_file, self.path, text.encode())
            engine, _ = self._wired()

            def audit(conn: Connection) -> None:
                engine.audit.append("policy.edited", record)

            await self._install(text, new, "edited on the companion", extra=audit)
            return record

    async def _install(
        self, text: str, new: Policy, why: str, extra: Callable[[Connection], None] | None
    ) -> None:
        engine, _ = self._wired()
        since = self.clock() - ledger_horizon(new)
        if since < self.ledger_since:  # a longer window: count the older spends before it decides anything
            assert self._ledger is not None, "the engine's ledger is built by `ledger()`"
            load_ledger(self.reader, since, self._ledger, until=self.ledger_since)
            self.ledger_since = since

        def record(conn: Connection) -> None:
            if extra is not None:
                extra(conn)
            set_meta(conn, policy_change.ACCEPTED, text)
            self._record_loaded(conn, engine.audit, why, new)

        await engine.writer.run(record)
        self.policy, self.text, self.proposal = new, text, None
        engine.install_policy(new)
        log.info("policy %s in force (%s)", new.policy_hash()[:16], why)

    async def propose(self, proposal: Proposal) -> str:
        """Open (once per proposed policy) a Tier 1 request to accept a loosening."""
        engine, approvals = self._wired()
        text, policy_hash, widens = proposal.text, proposal.policy_hash, proposal.widens
        now = self.clock()
        current = engine.policy.policy_hash()
        for open_id, open_body in approval_store.open_proposals(engine.reader, policy_hash, now):
            proposed: ApprovalRequestBody = json.loads(open_body)
            if proposed["policy"]["from_hash"] == current:  # one made over an older policy is stale
                return open_id
        request_id = "req_" + secrets.token_hex(16)
        reason = "the new policy file widens what the signer may sign on its own"
        decision = Decision(
            Outcome.ESCALATE,
            "policy.loosening",
            reason,
            tuple(Finding(Outcome.ESCALATE, "policy.loosening", w) for w in widens),
        )
        expires_at = now + engine.pending_ttl
        summary = f"loosen the signer policy ({len(widens)} change(s)) to {policy_hash[:16]}"
        body: ApprovalRequestBody = {
            "v": 1,
            "request_id": request_id,
            "kind": "policy",
            "chain_id": 0,
            "chain": "(no chain: policy)",
            "tx": None,
            "summary": summary,
            "actions": [],
            "policy": {"from_hash": engine.policy.policy_hash(), "to_hash": policy_hash, "widens": widens},
            "escalation": escalation_json(decision),
            "agent_reason_unverified": None,
            "created_at": now,
            "expires_at": expires_at,
        }
        pending = records.outcome(records.PENDING, request_id, decision, summary, expires_at=expires_at)

        def record(conn: Connection) -> None:
            approvals.open_request(conn, body, pending, requester="signer")
            approval_store.insert_proposal(conn, request_id, policy_hash, text)
            engine.audit.append(
                "policy.loosening_requested",
                {"request_id": request_id, "policy_hash": policy_hash, "widens": widens},
            )

        await engine.writer.run(record)
        approvals.announce()
        return request_id

    def _wired(self) -> tuple[SigningCore, Escalations]:
        assert self.engine is not None and self.approvals is not None, "wire the engine and approvals first"
        return self.engine, self.approvals
