"""The narrow interfaces between the signing engine and Tier 1 (approvals, kill switch, live policy, top-ups).

Tier 1 code never imports the engine, and the engine never imports Tier 1: each side names the
other only through these Protocols, and the daemon wires the real objects together. The import
contracts in pyproject.toml (`tier1-layers`, `sql-in-store`) keep it that way.

- `SigningCore` is what Tier 1 may use of the engine: the services it was built with (chains,
  session keys, the writer, the audit log, the reader, the clock), the policy in force and the
  one way to swap it, the freeze flag, and the two steps of sending an approved transaction
  (record a broadcast the node did not accept, follow it to its receipt).
- `Escalations` is what the engine, top-ups and policy changes use of the approvals: count and
  hold a request that will ask the companion, build its approval request, record it in the
  caller's transaction, wake the companions.
- `PolicyInstaller` is what the approvals use of the live policy: install a loosening the
  companion approved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from policies.context import Simulated
from policies.decision import Decision
from policies.intent import Decoded
from policies.model import Policy
from signer.chain import Broadcast, Chain
from signer.receipts import InFlight
from signer.records import SignOutcome
from signer.store.audit import AuditLog
from signer.store.requests import Connection
from signer.store.writer import Writer
from signer.tier1.devices import DeviceRegistry
from signer.tier1.topup_room import TopUps
from signer.tier2.session_keys import SessionKeys
from signer.wire.approval_request import ApprovalRequestBody


class SigningCore(Protocol):
    """The signing engine (signer.engine.Engine) as Tier 1 sees it."""

    frozen: bool
    """True from the instant a freeze begins: no Tier 2 signature while it is set (signer.tier1.kill_switch)."""

    @property
    def policy(self) -> Policy:
        """The policy in force now."""
        ...

    @property
    def chains(self) -> Mapping[int, Chain]: ...

    @property
    def keys(self) -> SessionKeys: ...

    @property
    def topups(self) -> TopUps: ...

    @property
    def writer(self) -> Writer: ...

    @property
    def audit(self) -> AuditLog: ...

    @property
    def reader(self) -> Connection: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def broadcast(self) -> bool:
        """Does the signer send what it signs (else the caller does)?"""
        ...

    @property
    def pending_ttl(self) -> float:
        """Seconds an escalated request waits for the companion."""
        ...

    def summarize(
        self, decoded: Decoded, payer: str | None = None, payer_name: str = "the session key"
    ) -> str:
        """One line for a person, in the names and decimals of the policy in force."""
        ...

    def install_policy(self, policy: Policy) -> None:
        """Swap the policy in force in one synchronous step (after it is on record)."""
        ...

    async def broadcast_unknown(
        self, request_id: str, result: SignOutcome, outcome: Broadcast
    ) -> SignOutcome:
        """Record that the node did not accept a signed transaction's broadcast; the reply says so."""
        ...

    def follow(self, chain: Chain, tx: InFlight) -> None:
        """Watch a transaction that left the signer until it is proven mined or dead (signer.receipts)."""
        ...


class Escalations(Protocol):
    """The approvals (signer.tier1.approvals.Approvals) as the engine, top-ups and policy changes see them."""

    @property
    def engine(self) -> SigningCore: ...

    @property
    def devices(self) -> DeviceRegistry: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    def hold(self, request: tuple[str, str]) -> str | None:
        """Count a (client id, idempotency key) about to ask the companion, or say why it may not."""
        ...

    def release(self, request: tuple[str, str]) -> None: ...

    async def prepare(
        self,
        *,
        request_id: str,
        kind: str,
        decoded: Decoded,
        summary: str,
        decision: Decision,
        agent_reason: str | None,
        now: float,
        expires_at: float,
        simulation: Simulated | None = None,
    ) -> ApprovalRequestBody:
        """The approval request the companion will be shown (not recorded yet)."""
        ...

    def insert(self, conn: Connection, body: ApprovalRequestBody) -> None:
        """Record an approval request in the caller's transaction."""
        ...

    def open_request(
        self, conn: Connection, body: ApprovalRequestBody, pending: SignOutcome, requester: str
    ) -> None:
        """Record a request no client's `sign.request` made, and its approval, in the caller's transaction."""
        ...

    def announce(self) -> None:
        """Wake every waiting bridge."""
        ...


class PolicyInstaller(Protocol):
    """The live policy (signer.tier1.policy_live.PolicyKeeper) as the approvals see it."""

    async def install_approved(
        self, text: str, from_hash: str, commit_approval: Callable[[Connection], None]
    ) -> None:
        """Install an approved loosening in the commit that closes its approval (StalePolicy if the
        policy in force is no longer the one it was proposed over)."""
        ...
