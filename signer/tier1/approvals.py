"""Tier 1: escalated requests wait here for a companion's answer, and the signer checks every answer.

The bridge only carries bytes. An answer counts only if all of this holds, checked here:
- the request is still open (single use) and not expired, and the answer names its exact hash
  and expiry;
- a paired, non-revoked device with that capability signed the domain-separated answer;
- for an approval, the raw transaction decodes, was signed by the main account, and matches the
  approved request field by field (chain, to, value, data; gas and fees within the bounds), and
  carries the main account's next nonce, read as it is checked (signer.tier1.main_tx); main-account
  approvals are checked and sent one at a time, so two escalated at the same nonce go out in turn.
Every refusal is audited and signs nothing. A deny may also freeze the signer (signer.tier1.kill_switch);
top-ups are escalated here like any request and checked against the key's cap (signer.tier1.topup).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from policies.context import Simulated
from policies.decision import Decision, Finding, Outcome
from policies.intent import Decoded
from policies.kernel.keccak import keccak256
from signer import records
from signer.chain import Sent
from signer.receipts import InFlight
from signer.simulate import simulate, simulation_card
from signer.store import approvals as approval_store, requests as request_store
from signer.store.approvals import APPROVED, DENIED, OPEN
from signer.store.audit import hash_at
from signer.store.requests import Connection
from signer.tier1.audit_witness import make_checkpoint
from signer.tier1.devices import DeviceRegistry, Evidence
from signer.tier1.identity import SignerIdentity
from signer.tier1.kill_switch import KillSwitch
from signer.tier1.main_tx import main_account_tx, mismatch, next_nonce
from signer.tier1.policy_change import StalePolicy
from signer.tier1.topup import exceeds_cap
from signer.txdecode import DecodedTx, TxDecodeError, decode_signed_eip1559
from signer.wire.approval_request import ApprovalRequestBody, RequestBuilder, request_hash
from signer.wire.messages import APPROVAL_DOMAIN, NONCE_DOMAIN, REQUEST_DOMAIN, answer_body, signed_message
from signer.wire.protocol import ApprovalAction, RequestStatus, RpcError
from signer.wire.requests import ApprovalAnswerParams, FreezeParams
from signer.wire.witness import Checkpoint, CheckpointAt

if TYPE_CHECKING:
    from signer.chain import Chain
    from signer.tier1.port import PolicyInstaller, SigningCore
NONCE_TIMEOUT = 2.0  # seconds per chain when a companion asks for the main account's next nonce
# Requests one client may have waiting on the companion at once: a hijacked bot must not bury the
# user in prompts until one gets approved without being read.
MAX_WAITING_PER_CLIENT = 10


class ApprovalsState(TypedDict):
    """What a bridge learns with every delivery: the freeze, the devices' revision, the main account."""

    frozen: bool
    freeze_id: str | None
    devices_rev: str
    main_account: str | None


class NonceQuote(TypedDict):
    """The main account's next (`main_nonce`) and mined (`main_nonce_mined`) nonce per chain, signed."""

    main_account: str | None
    main_nonce: dict[str, int]
    main_nonce_mined: dict[str, int]
    ts: float


class StateForSigning(ApprovalsState, NonceQuote):
    """`approvals.state`: the state, the nonce quote and its signature, and the audit checkpoint."""

    nonce_sig: str
    audit_checkpoint: Checkpoint


class Delivery(TypedDict):
    """One open request as delivered: `request` is its stored body with `signer_sig` added."""

    seq: int
    request: ApprovalRequestBody
    request_hash: str


class WaitResult(ApprovalsState):
    """`approvals.wait`: the open requests after the cursor, the new cursor and the state."""

    requests: list[Delivery]
    cursor: int


class Approvals:
    def __init__(
        self,
        engine: SigningCore,
        devices: DeviceRegistry,
        identity: SignerIdentity,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.devices = devices
        self.identity = identity  # signs what is delivered, so the companion can tell a rewritten request
        self.clock = clock
        self.policies: PolicyInstaller | None = None  # set by the daemon: installs approved loosenings
        self._builder = RequestBuilder(engine.policy)
        self._changed = asyncio.Event()
        self._main_lock = asyncio.Lock()
        self._held: set[tuple[str, str]] = set()  # escalations decided, their approval not recorded yet
        self.kill_switch = KillSwitch(engine, devices, clock)

    @property
    def builder(self) -> RequestBuilder:
        """Names and decimals from the policy in force, also after a reload."""
        if self._builder.policy is not self.engine.policy:
            self._builder = RequestBuilder(self.engine.policy)
        return self._builder

    # ---- creation (called by the engine on ESCALATE) ----------------------------------------

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
        call = decoded.call
        chain, main = self.engine.chains.get(call.chain_id), self.devices.main_account()
        tx = await main_account_tx(chain, main, call)
        if tx is not None and chain is not None and main is not None:
            # the main key signs this one: the card shows what it does to the main account's balances,
            # as the node simulates it (the owner's own reading; it allows nothing)
            simulation = await simulate(chain, main.lower(), call.to, call.value, call.data)
        builder = self.builder
        return builder.build(
            request_id=request_id,
            kind=kind,
            decoded=decoded,
            summary=summary,
            decision=decision,
            agent_reason=agent_reason,
            tx=tx,
            created_at=now,
            expires_at=expires_at,
            simulation=simulation_card(simulation, builder.index, call.chain_id),
        )

    def hold(self, request: tuple[str, str]) -> str | None:
        """Count a request (client id, idempotency key) that is about to ask the companion, or say why
        it may not: with those already open and those still on their way to being recorded, its
        client has MAX_WAITING_PER_CLIENT waiting. `release` it once its approval is recorded."""
        client_id = request[0]
        held = [key for holder, key in self._held if holder == client_id]  # recorded or not: counted once
        recorded = approval_store.open_for_client(self.engine.reader, client_id, self.clock(), held)
        waiting = recorded + len(held)
        if waiting >= MAX_WAITING_PER_CLIENT:
            return (
                f"{waiting} requests of this client are already waiting for your companion; "
                "answer them or let them expire first"
            )
        self._held.add(request)
        return None

    def release(self, request: tuple[str, str]) -> None:
        self._held.discard(request)

    @staticmethod
    def insert(conn: Connection, body: ApprovalRequestBody) -> None:
        approval_store.insert(conn, body, request_hash(body))

    def open_request(
        self, conn: Connection, body: ApprovalRequestBody, pending: records.SignOutcome, requester: str
    ) -> None:
        """A request no client's `sign.request` made (a top-up, a policy loosening): its pending
        row, keyed by its own id, and its approval, in the caller's transaction."""
        request_store.insert_pending(
            conn,
            body["request_id"],
            requester,
            body["kind"],
            request_hash(body),
            body["created_at"],
            json.dumps(pending),
            body["chain_id"],
            body["expires_at"],
            records.PENDING,
        )
        self.insert(conn, body)

    def announce(self) -> None:
        """Wake every waiting bridge: a request arrived, or devices or the freeze state changed."""
        self._changed.set()
        self._changed = asyncio.Event()

    # ---- delivery to the bridge -------------------------------------------------------------

    def _open_after(self, after: int, limit: int) -> list[Delivery]:
        rows = approval_store.open_after(self.engine.reader, after, self.clock(), limit)
        return [
            {"seq": seq, "request": self._signed(json.loads(body), digest), "request_hash": digest}
            for seq, body, digest in rows
        ]

    def _signed(self, request: ApprovalRequestBody, digest: str) -> ApprovalRequestBody:
        """The request as delivered: `signer_sig` (over its hash) rides along, outside the hash."""
        request["signer_sig"] = self.identity.sign(REQUEST_DOMAIN, {"request_hash": digest})
        return request

    def state(self) -> ApprovalsState:
        return {
            "frozen": self.engine.frozen,
            "freeze_id": self.kill_switch.current_id(),
            "devices_rev": self.devices.revision,
            "main_account": self.devices.main_account(),
        }

    async def state_for_signing(self, witness_seq: int | None = None) -> StateForSigning:
        """The state plus, per chain, the main account's next nonce (`main_nonce`, the mempool
        counted: a companion about to sign asks for it, so two requests escalated at the same nonce
        can both be approved in turn) and its mined transaction count (`main_nonce_mined`: only that
        may settle the companion's journal, since a transaction merely in a mempool can be evicted
        and sent again later by whoever holds it), both read now and signed with `ts`."""
        state = self.state()
        main = state["main_account"]

        async def within_budget(count: Awaitable[int]) -> int:
            async with asyncio.timeout(NONCE_TIMEOUT):
                return await count

        nonces: dict[str, int] = {}
        mined: dict[str, int] = {}
        for chain_id, chain in self.engine.chains.items() if main else ():
            assert main is not None
            pending, latest = await asyncio.gather(
                within_budget(next_nonce(chain, main)),
                within_budget(chain.mined_nonce(main)),
                return_exceptions=True,
            )
            # a chain that cannot be read (or garbles a count) is left out: for signing, the request's
            # own nonce is all there is; for settling, nothing settles on it
            if isinstance(pending, int):
                nonces[str(chain_id)] = pending
            if isinstance(latest, int):
                mined[str(chain_id)] = latest
        quote: NonceQuote = {
            "main_account": main,
            "main_nonce": nonces,
            "main_nonce_mined": mined,
            "ts": self.clock(),
        }
        # The audit log's committed head, signed: the companion keeps the latest and refuses to go back.
        seq, head = self.engine.audit.committed
        at: CheckpointAt | None = None
        if witness_seq is not None and 0 < witness_seq <= seq:  # bind this checkpoint to what the witness saw
            record_hash = hash_at(self.engine.reader, witness_seq)
            at = {"seq": witness_seq, "hash": record_hash} if record_hash is not None else None
        checkpoint = make_checkpoint(self.identity, seq, head, at, self.engine.audit.committed_epoch)
        return {
            **state,
            **quote,
            "nonce_sig": self.identity.sign(NONCE_DOMAIN, quote),
            "audit_checkpoint": checkpoint,
        }

    async def wait(self, after: int, timeout: float, limit: int) -> WaitResult:
        """Long-poll: returns at once if anything is newer than `after`, else when something arrives."""
        pending = self._open_after(after, limit)
        if not pending and timeout > 0:
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), timeout)
            except asyncio.TimeoutError:
                pass
            pending = self._open_after(after, limit)
        cursor = max([after] + [p["seq"] for p in pending])
        return {"requests": pending, "cursor": cursor, **self.state()}

    # ---- answers ----------------------------------------------------------------------------

    async def answer(self, params: ApprovalAnswerParams) -> records.SignOutcome:
        now = self.clock()
        evidence: Evidence = {
            "request_id": params.request_id,
            "device_id": params.device_id,
            "action": params.action,
        }
        row = approval_store.find(self.engine.reader, params.request_id)
        if row is None:
            raise await self._refuse(evidence, "no such approval request")
        kind, body_text, digest, expires_at, state = row
        if state != OPEN:
            raise await self._refuse(evidence, f"this request was already answered ({state}): replay refused")
        if params.request_hash != digest or params.expires_at != expires_at:
            raise await self._refuse(
                evidence, "the answer is for a different request (hash or expiry mismatch)"
            )
        if now >= expires_at:
            raise await self._refuse(evidence, "the request has expired")
        tx_hash = "0x" + keccak256(params.raw_tx).hex() if params.raw_tx else ""
        message = signed_message(
            APPROVAL_DOMAIN,
            answer_body(params.request_id, digest, params.action, expires_at, params.device_id, tx_hash),
        )
        device = await self.devices.authorize(
            params.device_id, params.action, message, params.signature, "approval.refused", evidence
        )
        body: ApprovalRequestBody = json.loads(body_text)  # as this signer stored and hashed it
        if params.action is ApprovalAction.APPROVE and kind == "policy":
            return await self._approve_policy(body, params, device.device_id, evidence)
        if params.action is ApprovalAction.APPROVE:
            return await self._approve(body, kind, params, device.device_id, device.main_address, evidence)
        return await self._deny(body, params, device.device_id, device.name)

    async def _refuse(self, evidence: Evidence, reason: str) -> RpcError:
        return await self.devices.refuse("approval.refused", evidence, reason)

    async def _approve(
        self,
        body: ApprovalRequestBody,
        kind: str,
        params: ApprovalAnswerParams,
        device_id: str,
        main: str,
        evidence: Evidence,
    ) -> records.SignOutcome:
        want = body["tx"]
        if want is None:
            raise await self._refuse(
                evidence, "this request has no main-account transaction to approve; deny it"
            )
        try:
            got = decode_signed_eip1559(params.raw_tx)
        except TxDecodeError as exc:
            raise await self._refuse(evidence, f"the signed transaction is malformed: {exc}") from None
        chain = self.engine.chains.get(want["chain_id"])
        assert chain is not None  # want["chain_id"] came from a configured chain
        # One main-account approval at a time, from reading its next nonce to broadcasting.
        async with self._main_lock:
            expected = await next_nonce(chain, main)
            problem = mismatch({**want, "nonce": expected}, got, main)
            if problem is not None:
                raise await self._refuse({**evidence, "tx_hash": got.tx_hash}, problem)
            return await self._record_and_send(body, kind, params, device_id, evidence, chain, got)

    async def _record_and_send(
        self,
        body: ApprovalRequestBody,
        kind: str,
        params: ApprovalAnswerParams,
        device_id: str,
        evidence: Evidence,
        chain: Chain,
        got: DecodedTx,
    ) -> records.SignOutcome:
        if kind == "topup" and await exceeds_cap(self.engine, body, chain, got.tx.to, got.tx.value):
            raise await self._refuse(
                evidence, "the top-up would exceed the session key's cap (or it is gone)"
            )
        result = self._answered(
            params.request_id,
            status=records.SIGNED,
            tx_hash=got.tx_hash,
            sender=got.sender,
            nonce=got.tx.nonce,
            chain_id=got.tx.chain_id,
            approved_by=device_id,
            tier=1,
            broadcast=self.engine.broadcast,
        )

        def record(conn: Connection) -> None:
            self._close(conn, params.request_id, APPROVED, device_id, {"tx_hash": got.tx_hash})
            request_store.mark_signed(conn, params.request_id, json.dumps(result), got.tx_hash, params.raw_tx)
            self.engine.audit.append(
                "approval.approved",
                {
                    "request_id": params.request_id,
                    "device_id": device_id,
                    "tx_hash": got.tx_hash,
                    "sender": got.sender,
                    "tx": got.tx.to_dict(),
                },
            )

        await self._write_once(record, evidence)
        if not self.engine.broadcast:
            return result
        outcome = await chain.broadcast(params.raw_tx, got.tx_hash)
        in_flight = InFlight(params.request_id, got.tx.chain_id, got.tx_hash, got.sender, got.tx.nonce)
        if (
            outcome.sent is not Sent.ACCEPTED
        ):  # not "failed": a refusal is the node's word, asking again could pay twice
            result = await self.engine.broadcast_unknown(params.request_id, result, outcome)
        self.engine.follow(chain, in_flight)
        return result

    async def _approve_policy(
        self, body: ApprovalRequestBody, params: ApprovalAnswerParams, device_id: str, evidence: Evidence
    ) -> records.SignOutcome:
        """Install the loosened policy at once, in the commit that closes the approval. Only over the
        policy it was proposed against: after any other change the user must see a fresh proposal."""
        if params.raw_tx:
            raise await self._refuse(evidence, "a policy approval carries no transaction")
        if self.policies is None:
            raise await self._refuse(evidence, "this signer cannot install policies while running")
        policy_hash, text = approval_store.proposal(self.engine.reader, params.request_id)
        result = self._answered(
            params.request_id,
            status=RequestStatus.APPROVED,
            approved_by=device_id,
            policy_hash=policy_hash,
            note="the approved policy is in force",
        )

        def record(conn: Connection) -> None:
            self._close(conn, params.request_id, APPROVED, device_id, {"policy_hash": policy_hash})
            request_store.set_outcome(conn, params.request_id, RequestStatus.APPROVED, json.dumps(result))
            self.engine.audit.append(
                "policy.loosening_approved",
                {"request_id": params.request_id, "device_id": device_id, "policy_hash": policy_hash},
            )

        try:
            await self._write_once(
                record,
                evidence,
                commit=partial(self.policies.install_approved, text, body["policy"]["from_hash"]),
            )
        except StalePolicy as exc:
            raise await self._refuse(evidence, str(exc)) from None
        return result

    async def _deny(
        self, body: ApprovalRequestBody, params: ApprovalAnswerParams, device_id: str, device_name: str
    ) -> records.SignOutcome:
        freeze = params.action is ApprovalAction.FREEZE
        reason = f"denied on your companion ({device_name})" + (
            " and the signer was frozen" if freeze else ""
        )
        if params.note:
            reason += f": {params.note}"
        rule_id = "companion.denied_and_frozen" if freeze else "companion.denied"
        decision = Decision(Outcome.DENY, rule_id, reason, (Finding(Outcome.DENY, rule_id, reason),))
        result = self._answered(
            params.request_id,
            status=records.DENIED,
            rule_id=rule_id,
            reason=reason,
            decision=records.decision_to_json(decision),
            denied_by=device_id,
        )
        if freeze:
            self.kill_switch.disarm_all()

        def record(conn: Connection) -> None:
            self._close(conn, params.request_id, DENIED, device_id, {"freeze": freeze})
            request_store.set_outcome(conn, params.request_id, "denied", json.dumps(result))
            self.engine.audit.append(
                "approval.denied",
                {
                    "request_id": params.request_id,
                    "device_id": device_id,
                    "freeze": freeze,
                    "note": params.note,
                },
            )
            if freeze:
                self.kill_switch.persist(conn, device_id)

        await self._write_once(
            record, {"request_id": params.request_id, "device_id": device_id, "action": params.action}
        )
        if freeze:
            self.announce()
        return result

    def _answered(self, request_id: str, /, **changes: Unpack[records.AnswerFields]) -> records.SignOutcome:
        """The request's stored outcome updated by its answer; no longer pending, so no expiry."""
        stored: records.SignOutcome = json.loads(request_store.outcome_of(self.engine.reader, request_id))
        result: records.SignOutcome = {**stored, **changes}
        result.pop("expires_at", None)
        return result

    def _close(
        self, conn: Connection, request_id: str, state: str, device_id: str, answer: Mapping[str, object]
    ) -> None:
        """Close an open, unexpired request in the answer's own transaction: the expiry is checked
        again here, since an answer may have waited (for the main-account lock, for the chain)."""
        if not approval_store.close(conn, request_id, state, self.clock(), device_id, answer):
            raise _Expired() if approval_store.is_open(conn, request_id) else _AlreadyAnswered()

    async def _write_once(
        self,
        unit: Callable[[Connection], None],
        evidence: Evidence,
        commit: Callable[[Callable[[Connection], None]], Awaitable[Any]] | None = None,
    ) -> None:
        """Two answers racing for one request: the first commit wins, the second is a replay."""
        try:
            await (commit or self.engine.writer.run)(unit)
        except _AlreadyAnswered:
            raise await self._refuse(evidence, "this request was already answered: replay refused") from None
        except _Expired:
            raise await self._refuse(evidence, "the request has expired") from None

    # ---- the kill switch (signer.tier1.kill_switch) ------------------------------------------------

    async def freeze(self, params: FreezeParams) -> ApprovalsState:
        await self.kill_switch.toggle(params)
        self.announce()
        return self.state()

    async def freeze_on_host(self, client_name: str) -> ApprovalsState:
        await self.kill_switch.freeze_on_host(client_name)
        self.announce()
        return self.state()


class _AlreadyAnswered(Exception):
    pass


class _Expired(Exception):
    pass
