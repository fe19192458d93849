"""The signing pipeline: decode, decide and reserve, build, simulate, sign, commit, send.

Order matters and is the security argument:
- the decision and its reservation happen in one synchronous step on the event loop, so
  concurrent requests cannot together exceed a limit (the in-memory ledger is the one every
  decision reads; the durable rows rebuild it at start-up);
- the transaction is built and signed in memory, then the request, its idempotency key, the
  decision with every input, the reservation and the signed transaction are written in ONE
  transaction (one fsync): the audit log gets `sign.decided` and then `sign.signed` (or
  `sign.abandoned` when simulation or the key refused), hash-chained, or nothing at all;
- nothing leaves the process (no reply with a signature, no broadcast) before that commit.
  A crash before it loses only a signature nobody has seen and a reservation for a transaction
  that cannot exist, so a retried key decides afresh; a crash after it replays the stored
  outcome. Either way an idempotency key signs at most one transaction that leaves the signer;
- if the commit fails, the signature is dropped, its nonce handed out again and the reservation
  released: fail closed, nothing was sent.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, NotRequired, TypedDict, cast

from policies.context import EvalContext, QuoteKey, Simulated
from policies.decision import Decision, Outcome
from policies.decode import decode
from policies.evaluate import evaluate
from policies.intent import Decoded
from policies.model import Policy
from signer import records
from signer.auth import Client
from signer.chain import Broadcast, Chain, Sent
from signer.fees import note_clamp
from signer.intents import intent_to_call, legacy_request_hash, request_hash
from signer.ledger import Ledger, SignerState
from signer.receipts import InFlight, ReceiptWatcher
from signer.simulate import simulate
from signer.store import requests as request_store
from signer.store.audit import AuditLog, prepare as audit_record
from signer.store.requests import Connection
from signer.store.writer import Writer
from signer.summary import Summarizer
from signer.swap_quotes import read_quotes
from signer.tier1.topup_room import TopUps
from signer.tier2.session_keys import SessionKeys
from signer.tier2.signing import Ending, SessionSigner
from signer.wire.approval_request import ApprovalRequestBody
from signer.wire.protocol import EncodedResult, ErrorCode, RpcError
from signer.wire.requests import Intent, SignRequestParams

if TYPE_CHECKING:
    from signer.tier1.port import Escalations

log = logging.getLogger("owlia.signer")


class Preview(TypedDict):
    """`sign.preview`: what the policy would say now."""

    summary: str
    decision: records.DecisionRecord
    actions: list[records.ActionRecord]


class InFlightEntry(TypedDict):
    request_id: str
    status: str
    chain_id: int
    tx_hash: str
    nonce: int
    created_at: float
    held: dict[str, str]  # asset -> base units its spends still hold


class Unproven(TypedDict):
    """Signed transactions not yet proven mined or dead (`owlia signer status`'s `in_flight`)."""

    count: int
    unconfirmed: int
    held: dict[str, str]  # "chain:asset" -> base units held
    transactions: NotRequired[list[InFlightEntry]]  # which ones: for the admin only


class Engine:
    def __init__(
        self,
        *,
        policy: Policy,
        keys: SessionKeys,
        ledger: Ledger,
        chains: dict[int, Chain],
        writer: Writer,
        audit: AuditLog,
        reader: Connection,
        broadcast: bool = True,
        pending_ttl: float = 300.0,
        frozen: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.install_policy(policy)
        self.keys = keys
        self.ledger = ledger
        self.tier2 = SessionSigner(keys, ledger, nonce_ceiling=self.nonce_ceiling)
        self.chains = chains
        self.writer = writer
        self.audit = audit
        self.reader = reader
        self.broadcast = broadcast
        self.pending_ttl = pending_ttl
        self.frozen = frozen
        self.clock = clock
        # (client id, idempotency key) -> the request's hash and reply, once it has one
        self._inflight: dict[tuple[str, str], asyncio.Future[tuple[str, records.SignOutcome]]] = {}
        self._request_seq = itertools.count(time.time_ns() // 1000)  # see _new_request_id
        self.receipts = ReceiptWatcher(writer, audit, reader, ledger, clock)
        self.topups = TopUps(reader)  # top-ups in flight per session key, counted against its cap
        self.approvals: Escalations | None = None  # Tier 1 delivery; set by the daemon when wired
        # Are other clients' requests already waiting to be read? Set by the daemon (signer.backlog).
        self.more_waiting: Callable[[], bool] = lambda: False
        # Is the request's own connection the only one open? Set by the daemon (signer.server).
        self.sole_connection: Callable[[], bool] = lambda: False

    def install_policy(self, policy: Policy) -> None:
        """Swap the policy in one synchronous step (see signer.tier1.policy_live)."""
        self.policy = policy
        self.summarize = Summarizer(policy)
        self._windows = policy.window_seconds()

    # ---- decisions without signing ----------------------------------------------------------

    def preview(self, intent: Intent, source: str = "agent") -> Preview:
        """What the policy would say right now; reserves nothing, signs nothing."""
        call = intent_to_call(intent, source)
        decoded = decode(call)
        decision = evaluate(self.policy, decoded, self._context(decoded, self.clock()))
        return {
            "summary": self.summarize(decoded),
            "decision": records.decision_to_json(decision),
            "actions": records.decoded_to_json(decoded),
        }

    def _context(self, decoded: Decoded, now: float) -> EvalContext:
        key = self.keys.current(decoded.call.chain_id)
        state = SignerState(
            session_key_expires_at=key.expires_at if key else None,
            session_key_balance_cap=key.balance_cap if key else None,
            frozen=self.frozen,
        )
        return self.ledger.context(decoded, self._windows, now, state)

    # ---- sign.request -----------------------------------------------------------------------

    async def sign_request(self, client: Client, params: SignRequestParams) -> records.SignOutcome:
        key = (client.client_id, params.idempotency_key)
        digest = request_hash(params)
        inflight = self._inflight.get(key)
        if inflight is not None:
            first = await asyncio.shield(inflight)
            return self._same_request_or_conflict(first, digest)
        row = request_store.by_idempotency_key(self.reader, *key)
        if row is not None:
            if row[0] != digest and row[0] != legacy_request_hash(params):
                raise _conflict()
            if row[1] is None:
                return records.outcome(
                    records.FAILED,
                    row[2],
                    None,
                    "",
                    error="interrupted before completion; nothing was broadcast",
                    replayed=True,
                )
            stored: records.SignOutcome = json.loads(row[1])
            return {**stored, "replayed": True}
        future: asyncio.Future[tuple[str, records.SignOutcome]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await self._process(client, params, digest)
            future.set_result((digest, result))
            return result
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: duplicates re-raise it themselves
            raise
        finally:
            del self._inflight[key]
            if self.approvals is not None:
                self.approvals.release(key)  # its approval is on record by now, or never will be

    def _new_request_id(self) -> str:
        """`req_` and 32 hex digits, as before: 14 of a counter that starts at the microsecond the
        engine started, then 72 random bits. Ids that rise in order append to the end of the two
        indexes keyed by request id (the requests' own and the spends'), where random ids each
        touched a random leaf: a commit writes fewer pages to the WAL, and a checkpoint copies fewer."""
        return f"req_{next(self._request_seq):014x}{secrets.token_hex(9)}"

    @staticmethod
    def _same_request_or_conflict(first: tuple[str, records.SignOutcome], digest: str) -> records.SignOutcome:
        first_digest, result = first
        if first_digest != digest:
            raise _conflict()
        return {**result, "replayed": True}

    async def _process(self, client: Client, params: SignRequestParams, digest: str) -> records.SignOutcome:
        now = self.clock()
        policy = self.policy  # the one this request is decided under, even if a reload lands meanwhile
        request_id = self._new_request_id()
        call = intent_to_call(params.intent, params.source)
        decoded = decode(call)
        chain = self.chains.get(call.chain_id)
        defi = await self._defi_inputs(decoded, chain, policy) if decoded.is_defi() else None
        tier3 = self.tier2.tier3
        on_tier3 = tier3 is not None and tier3.live(call.chain_id) is not None
        summary = self.summarize(
            decoded,
            defi[0] if defi is not None else None,
            "your main account" if on_tier3 else "the session key",
        )
        ctx = self._context(decoded, now)  # after the last await: read and reserved in one synchronous step
        if defi is not None:
            ctx = replace(ctx, payer=defi[0], swap_quotes=defi[1], simulation=defi[2])
        pre_check = None
        if chain is None:
            pre_check = "chain.not_configured"
            decision = records.deny(pre_check, f"the signer has no RPC configured for chain {call.chain_id}")
        else:
            decision = evaluate(policy, decoded, ctx)
        policy_decision = None
        if decision.outcome is Outcome.ESCALATE and self.approvals is not None:
            # Decided and held in this same synchronous step, like a spend: concurrent escalations count.
            crowded = self.approvals.hold((client.client_id, params.idempotency_key))
            if crowded is not None:  # the policy would ask you, but too many of its asks are waiting already
                policy_decision, decision = (
                    decision,
                    records.deny("approvals.too_many_waiting", crowded, decision),
                )
        if decision.outcome is Outcome.ALLOW:
            self.ledger.reserve(request_id, decision, decoded, now)
        final, ending, approval = await self._conclude(
            request_id, decision, decoded, chain, summary, params.reason, now, ctx.simulation, ctx.payer
        )
        evidence: records.DecidedRecord = {
            "request_id": request_id,
            "client": client.name,
            "source": params.source,
            "idempotency_key": params.idempotency_key,
            "request_hash": digest,
            "call": records.call_to_json(call),
            "actions": records.decoded_to_json(decoded),
            "context": records.context_to_json(ctx),
            "policy_hash": policy.policy_hash(),
            "decision": records.decision_to_json(decision),
            "agent_reason_unverified": params.reason,
            "pre_check": pre_check,
        }
        if policy_decision is not None:  # the signer overrode the policy's answer: replay checks this one
            evidence["policy_decision"] = records.decision_to_json(policy_decision)
        status = final["status"]
        outcome_json = records.encoded(final)  # stored, and sent as the reply: encoded once
        raw_tx = None if ending is None else ending.raw_tx
        signed = raw_tx is not None
        alone = await self._alone(request_id, ending, chain)
        approvals = self.approvals
        try:
            # Serialized here, on the loop: the writer thread then holds the GIL only to bind and chain.
            trail = [audit_record("sign.decided", evidence, now)]
            if ending is not None:
                trail.append(audit_record(ending.audit_kind, ending.audit_body))
            row = (
                request_id,
                client.client_id,
                params.idempotency_key,
                "sign",
                digest,
                now,
                status,
                outcome_json.decode(),
                call.chain_id,
                now + self.pending_ttl if status == records.PENDING else None,
                final["tx_hash"] if signed else None,
                raw_tx,
            )

            def record(conn: Connection) -> None:
                request_store.insert_sign(conn, row)
                if ending is not None:
                    self._persist_reservation(conn, request_id, decision, decoded, now, ending.spend_state)
                if approval is not None and approvals is not None:
                    approvals.insert(conn, approval)
                self.audit.write(*trail)

            await self.writer.run(record, inline=alone)
        except request_store.IntegrityError:
            self._drop(request_id, ending, chain)
            raise _conflict() from None
        except Exception:  # the commit, or records that could not be prepared (e.g. a secret in one)
            self._drop(request_id, ending, chain)
            log.exception("could not record request %s", request_id)
            raise RpcError(
                ErrorCode.UNAVAILABLE, "the audit log could not be written; nothing was sent"
            ) from None
        if approval is not None and approvals is not None:
            approvals.announce()
        if not signed or not self.broadcast:
            # still the outcome's dict, sent as the bytes just stored
            return cast(records.SignOutcome, EncodedResult(final, outcome_json))
        assert chain is not None and ending is not None
        return await self._send(request_id, decision, chain, ending, now)

    async def _defi_inputs(
        self, decoded: Decoded, chain: Chain | None, policy: Policy
    ) -> tuple[str | None, dict[QuoteKey, int | None], Simulated | None]:
        """A swap, wrap or unwrap: who pays (the chain's session key), the signer's own quotes and the
        node's simulation of the exact transaction from that account (docs/defi.md)."""
        key = self.keys.current(decoded.call.chain_id)
        if chain is None or key is None:
            return None, {}, None
        call = decoded.call
        tier3 = self.tier2.tier3
        grant = None if tier3 is None else tier3.live(call.chain_id)
        # Tier 3: the main account pays and receives (the session key only redeems the grant)
        payer = key.address if grant is None else grant.account
        quotes = await read_quotes(chain, decoded, policy.index)
        simulated = await simulate(chain, payer, call.to, call.value, call.data)
        return payer, quotes, simulated

    async def _conclude(
        self,
        request_id: str,
        decision: Decision,
        decoded: Decoded,
        chain: Chain | None,
        summary: str,
        agent_reason: str | None,
        now: float,
        simulation: Simulated | None = None,
        payer: str | None = None,
    ) -> tuple[records.SignOutcome, Ending | None, ApprovalRequestBody | None]:
        """The reply for each outcome: denied; pending with its approval request; or signed in memory."""
        if decision.outcome is Outcome.DENY:
            return records.outcome(records.DENIED, request_id, decision, summary), None, None
        if decision.outcome is Outcome.ESCALATE:
            expires_at = now + self.pending_ttl
            approval = None
            if self.approvals is not None:
                approval = await self.approvals.prepare(
                    request_id=request_id,
                    kind="sign",
                    decoded=decoded,
                    summary=summary,
                    decision=decision,
                    agent_reason=agent_reason,
                    now=now,
                    expires_at=expires_at,
                    simulation=simulation,
                )
            pending = records.outcome(records.PENDING, request_id, decision, summary, expires_at=expires_at)
            return pending, None, approval
        assert chain is not None  # no chain is a pre-check denial
        try:
            ending = await self.tier2.sign(
                request_id,
                decision,
                decoded,
                chain,
                summary,
                frozen=self.frozen,
                broadcast=self.broadcast,
                payer=payer,
            )
        except Exception:  # a bug: the decision and this failure still go on record
            log.exception("could not build or sign %s", request_id)
            ending = self.tier2.abandoned(request_id, decision, summary, None, "internal error while signing")
        except BaseException:  # cancelled: nothing was signed, nothing written
            self.ledger.release(request_id)
            raise
        ending = note_clamp(
            ending, chain
        )  # a tip the node asked for above the chain's ceiling goes on record
        return ending.result, ending, None

    async def _alone(self, request_id: str, ending: Ending | None, chain: Chain | None) -> bool:
        """Is this request alone in the signer? Then it commits on the loop, not via the writer thread.

        Requests that arrived together were all read off their sockets already and are queued right
        behind this one: yield once so they reach their commit points too and count as in flight.
        Requests not read yet are in the kernel, where `more_waiting` sees them.

        With one connection open there is nobody to wait for: the server answers a connection's
        frames one after another, so nothing else can be read off a socket and queued meanwhile,
        and the yield (a turn of the loop and an epoll call) is skipped.
        """
        if len(self._inflight) > 1:
            return False
        if self.sole_connection():
            return True
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:  # nothing written yet: undo the reservation and the nonce
            self._drop(request_id, ending, chain)
            raise
        return len(self._inflight) <= 1 and not self.more_waiting()  # one epoll call, after the yield

    async def _send(
        self, request_id: str, decision: Decision, chain: Chain, ending: Ending, now: float
    ) -> records.SignOutcome:
        """Broadcast a signed transaction that is already durable, then follow it to its fate.

        Whatever the node answers, the spend stays counted: a refusal is only the node's word (a
        lying node can refuse and relay the transaction anyway), a lost answer says nothing. Only
        the receipt watcher releases it, on proof that its nonce was taken (signer.receipts).
        """
        assert ending.raw_tx is not None and ending.sender is not None
        tx_hash = ending.result["tx_hash"]
        # From here its spends count in every window until it is settled (signer.receipts)
        self.ledger.hold(
            request_id, now, ((s.chain_id, s.asset, s.amount, s.usd_micros) for s in decision.spends)
        )
        outcome = await chain.broadcast(ending.raw_tx, tx_hash)
        in_flight = InFlight(request_id, chain.settings.id, tx_hash, ending.sender, ending.result["nonce"])
        if outcome.sent is Sent.ACCEPTED:
            self.receipts.watch(chain, in_flight)
            return ending.result
        chain.forget_nonce(ending.sender)  # the next request re-reads the account's nonce
        result = await self.broadcast_unknown(request_id, ending.result, outcome)
        self.receipts.watch(chain, in_flight)
        return result

    async def broadcast_unknown(
        self, request_id: str, result: records.SignOutcome, outcome: Broadcast
    ) -> records.SignOutcome:
        """The node did not accept the broadcast (refused it, or its answer was lost), Tier 2 or 1:
        on record as `unconfirmed` with its spend still held, and said so in the reply."""
        refused = outcome.sent is Sent.REJECTED
        note = (
            f"{outcome.error}; the signer cannot prove it was never sent, so it may still be mined: its spend "
            "stays counted until it is mined or its nonce is taken by another of the signer's transactions"
        )
        held: records.SignOutcome = {**result, "broadcast_unknown": note}
        body = {
            "request_id": request_id,
            "tx_hash": result["tx_hash"],
            "error": outcome.error,
            "node_refused": refused,
        }

        def record(conn: Connection) -> None:
            request_store.set_outcome_if(
                conn, request_id, records.UNCONFIRMED, records.stored(held), current=records.SIGNED
            )
            self.audit.append("sign.broadcast_unknown", body)

        await self.writer.run(record)
        return held

    def _drop(self, request_id: str, ending: Ending | None, chain: Chain | None) -> None:
        """The record was not written: forget the in-memory reservation and any signature."""
        if ending is None:
            return
        self.ledger.release(request_id)
        if ending.sender is not None and chain is not None:
            chain.forget_nonce(ending.sender)  # the signature never left: its nonce is reused

    @staticmethod
    def _persist_reservation(
        conn: Connection, request_id: str, decision: Decision, decoded: Decoded, now: float, state: str
    ) -> None:
        request_store.insert_spends(
            conn,
            request_id,
            ((s.chain_id, s.asset, s.amount, s.usd_micros) for s in decision.spends),
            now,
            state,
        )
        if decision.new_recipients:
            request_store.insert_recipients(
                conn, request_id, decoded.call.chain_id, decision.new_recipients, now
            )

    # ---- sign.status ------------------------------------------------------------------------

    def status_of(self, client: Client, request_id: str) -> records.SignOutcome:
        row = request_store.status_row(self.reader, request_id)
        if row is None or row[0] != client.client_id:
            raise RpcError(ErrorCode.NOT_FOUND, f"no request {request_id} for this client")
        body: records.SignOutcome = (
            json.loads(row[2]) if row[2] else {"status": row[1], "request_id": request_id}
        )
        if row[1] == records.PENDING and row[3] is not None and self.clock() >= row[3]:
            body = {**body, "status": records.EXPIRED}
        body["state"] = row[1]
        return body

    def nonce_ceiling(self, chain_id: int, address: str) -> int:
        """One past the highest nonce the signer ever signed from `address` on `chain_id` (0 if none):
        read from the records when a node is asked for the account's nonce (rare: not per request)."""
        return request_store.nonce_ceiling(self.reader, chain_id, address)

    def unproven(self, limit: int = 50) -> Unproven:
        """Signed transactions that left the signer and are not yet proven mined or dead, with the
        spends they hold: what `owlia signer status` shows under `in_flight`. Read from the receipt
        watcher's own list, one indexed lookup per transaction: `status` stays cheap."""
        entries: list[InFlightEntry] = []
        totals: dict[str, int] = {}
        for tx in self.receipts.following():
            row = request_store.status_and_created(self.reader, tx.request_id)
            if row is None or row[0] not in records.IN_FLIGHT:
                continue  # settled a moment ago
            held: dict[str, int] = {}
            for asset, amount in request_store.held_amounts(self.reader, tx.request_id):
                held[asset] = held.get(asset, 0) + int(amount)
                totals[f"{tx.chain_id}:{asset}"] = totals.get(f"{tx.chain_id}:{asset}", 0) + int(amount)
            entries.append(
                {
                    "request_id": tx.request_id,
                    "status": row[0],
                    "chain_id": tx.chain_id,
                    "tx_hash": tx.tx_hash,
                    "nonce": tx.nonce,
                    "created_at": row[1],
                    "held": {k: str(v) for k, v in held.items()},
                }
            )
        return {
            "count": len(entries),
            "unconfirmed": sum(e["status"] == records.UNCONFIRMED for e in entries),
            "held": {k: str(v) for k, v in totals.items()},
            "transactions": entries[-limit:],
        }

    def follow(self, chain: Chain, tx: InFlight) -> None:
        """Follow a transaction that left the signer to its fate (signer.receipts)."""
        self.receipts.watch(chain, tx)

    async def close(self) -> None:
        await self.receipts.close()


def _conflict() -> RpcError:
    return RpcError(
        ErrorCode.IDEMPOTENCY_CONFLICT, "this idempotency key was already used for a different request"
    )
