"""The signing pipeline: decode, decide and reserve, audit, build, simulate, sign, commit, send.

Order matters and is the security argument:
- the decision and its reservation happen in one synchronous step on the event loop, so
  concurrent requests cannot together exceed a limit;
- the decision, its inputs and the reservation are durably written before any signature
  exists (fail closed: no audit record, no signature);
- the signed transaction is durably written before it is broadcast, so nothing reaches the
  chain that the audit log does not hold;
- an idempotency key is consumed by its first request forever, across restarts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from policies.decision import Decision, Finding, Outcome
from policies.decode import decode, encode_erc20_transfer
from policies.evaluate import evaluate
from policies.intent import Call, Decoded, Flag
from policies.model import Policy
from signer import records
from signer.auth import Client
from signer.chain import Chain, ChainError, SimulationReverted
from signer.ledger import Ledger, SignerState
from signer.protocol import ErrorCode, Intent, RpcError, SignRequestParams
from signer.session_keys import SessionKeys
from signer.store.audit import AuditLog
from signer.store.writer import Writer
from signer.summary import Summarizer
from signer.txcodec import Eip1559Tx, sign_eip1559

if TYPE_CHECKING:
    from signer.approvals import Approvals

log = logging.getLogger("owlia.signer")


def request_hash(params: SignRequestParams) -> str:
    body = json.dumps(params.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def intent_to_call(intent: Intent, source: str) -> Call:
    """Reduce an intent to raw bytes; a token transfer becomes ERC-20 calldata built here."""
    flags = {Flag(f) for f in intent.flags if f in Flag._value2member_map_}
    if source.startswith("skill"):
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
        reader: sqlite3.Connection,
        broadcast: bool = True,
        pending_ttl: float = 300.0,
        frozen: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy
        self.keys = keys
        self.ledger = ledger
        self.chains = chains
        self.writer = writer
        self.audit = audit
        self.reader = reader
        self.broadcast = broadcast
        self.pending_ttl = pending_ttl
        self.frozen = frozen
        self.clock = clock
        self.summarize = Summarizer(policy)
        self._inflight: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}
        self._windows = policy.window_seconds()
        self._background: set[asyncio.Task] = set()
        self.approvals: Approvals | None = None  # Tier 1 delivery; set by the daemon when wired

    # ---- decisions without signing ----------------------------------------------------------

    def preview(self, intent: Intent, source: str = "agent") -> dict[str, Any]:
        """What the policy would say right now; reserves nothing, signs nothing."""
        call = intent_to_call(intent, source)
        decoded = decode(call)
        decision = evaluate(self.policy, decoded, self._context(decoded, self.clock()))
        return {
            "summary": self.summarize(decoded),
            "decision": records.decision_to_json(decision),
            "actions": records.decoded_to_json(decoded),
        }

    def _context(self, decoded: Decoded, now: float):
        key = self.keys.current(decoded.call.chain_id)
        state = SignerState(
            session_key_expires_at=key.expires_at if key else None,
            session_key_balance_cap=key.balance_cap if key else None,
            frozen=self.frozen,
        )
        return self.ledger.context(decoded, self._windows, now, state)

    # ---- sign.request -----------------------------------------------------------------------

    async def sign_request(self, client: Client, params: SignRequestParams) -> dict[str, Any]:
        key = (client.client_id, params.idempotency_key)
        digest = request_hash(params)
        inflight = self._inflight.get(key)
        if inflight is not None:
            first = await asyncio.shield(inflight)
            return self._same_request_or_conflict(first, digest)
        row = self.reader.execute(
            "SELECT request_hash, outcome, request_id FROM requests WHERE client_id=? AND idempotency_key=?", key
        ).fetchone()
        if row is not None:
            if row[0] != digest:
                raise _conflict()
            if row[1] is None:
                return records.outcome(
                    records.FAILED, row[2], None, "", error="interrupted before completion; nothing was broadcast",
                    replayed=True,
                )
            return {**json.loads(row[1]), "replayed": True}
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            result = await self._process(client, params, digest)
            future.set_result({**result, "_hash": digest})
            return result
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: duplicates re-raise it themselves
            raise
        finally:
            del self._inflight[key]

    @staticmethod
    def _same_request_or_conflict(first: dict[str, Any], digest: str) -> dict[str, Any]:
        if first.get("_hash") != digest:
            raise _conflict()
        return {k: v for k, v in first.items() if k != "_hash"} | {"replayed": True}

    async def _process(self, client: Client, params: SignRequestParams, digest: str) -> dict[str, Any]:
        now = self.clock()
        request_id = "req_" + secrets.token_hex(16)
        call = intent_to_call(params.intent, params.source)
        decoded = decode(call)
        summary = self.summarize(decoded)
        chain = self.chains.get(call.chain_id)
        ctx = self._context(decoded, now)
        pre_check = None
        if chain is None:
            pre_check = "chain.not_configured"
            decision = _deny(pre_check, f"the signer has no RPC configured for chain {call.chain_id}")
        else:
            decision = evaluate(self.policy, decoded, ctx)
        allowed = decision.outcome is Outcome.ALLOW
        if allowed:
            self.ledger.reserve(request_id, decision, decoded, now)

        if decision.outcome is Outcome.DENY:
            status, final = "denied", records.outcome(records.DENIED, request_id, decision, summary)
        elif decision.outcome is Outcome.ESCALATE:
            status = "pending_approval"
            final = records.outcome(
                records.PENDING, request_id, decision, summary, expires_at=now + self.pending_ttl
            )
        else:
            status, final = "reserved", None
        approval = None
        if status == "pending_approval" and self.approvals is not None:
            approval = await self.approvals.prepare(
                request_id=request_id, kind="sign", decoded=decoded, summary=summary, decision=decision,
                agent_reason=params.reason, now=now, expires_at=now + self.pending_ttl)
        evidence = {
            "request_id": request_id,
            "client": client.name,
            "source": params.source,
            "idempotency_key": params.idempotency_key,
            "request_hash": digest,
            "call": records.call_to_json(call),
            "actions": records.decoded_to_json(decoded),
            "context": records.context_to_json(ctx),
            "policy_hash": self.policy.policy_hash(),
            "decision": records.decision_to_json(decision),
            "agent_reason_unverified": params.reason,
            "pre_check": pre_check,
        }

        def record_decision(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash, created_at, status,"
                " outcome, chain_id, expires_at) VALUES(?,?,?,?,?,?,?,?,?,?)",
                (request_id, client.client_id, params.idempotency_key, "sign", digest, now, status,
                 None if final is None else json.dumps(final), call.chain_id,
                 now + self.pending_ttl if status == "pending_approval" else None),
            )
            if allowed:
                self._persist_reservation(conn, request_id, decision, decoded, now)
            if approval is not None:
                self.approvals.insert(conn, approval)  # type: ignore[union-attr]
            self.audit.append("sign.decided", evidence, ts=now)

        try:
            await self.writer.run(record_decision)
        except sqlite3.IntegrityError:
            if allowed:
                self.ledger.release(request_id)
            raise _conflict() from None
        except Exception:
            if allowed:
                self.ledger.release(request_id)
            log.exception("could not record decision %s", request_id)
            raise RpcError(ErrorCode.UNAVAILABLE, "the audit log could not be written; nothing was signed") from None
        if approval is not None:
            self.approvals.announce()  # type: ignore[union-attr]
        if final is not None:
            return final
        assert chain is not None
        return await self._sign_and_send(request_id, decision, decoded, chain, summary)

    @staticmethod
    def _persist_reservation(
        conn: sqlite3.Connection, request_id: str, decision: Decision, decoded: Decoded, now: float
    ) -> None:
        conn.executemany(
            "INSERT INTO spends(request_id, chain_id, asset, amount, usd_micros, ts, state) VALUES(?,?,?,?,?,?,?)",
            [
                (request_id, s.chain_id, s.asset, str(s.amount), None if s.usd_micros is None else str(s.usd_micros),
                 now, "reserved")
                for s in decision.spends
            ],
        )
        conn.executemany(
            "INSERT OR IGNORE INTO recipients(chain_id, address, first_seen, request_id) VALUES(?,?,?,?)",
            [(decoded.call.chain_id, r, now, request_id) for r in decision.new_recipients],
        )

    async def _sign_and_send(
        self, request_id: str, decision: Decision, decoded: Decoded, chain: Chain, summary: str
    ) -> dict[str, Any]:
        call = decoded.call
        key = self.keys.current(call.chain_id)
        if key is None or self.frozen:
            return await self._abandon(request_id, decision, summary, "session_key.unavailable",
                                       "the session key was revoked or the signer frozen before signing")
        try:
            gas = await chain.gas_for(key.address, call.to, call.value, call.data)
            fees = await chain.fees()
            nonce = await chain.next_nonce(key.address)
        except SimulationReverted as exc:
            return await self._abandon(request_id, decision, summary, "simulation.reverted",
                                       f"the transaction would revert: {exc.reason}")
        except ChainError as exc:
            return await self._abandon(request_id, decision, summary, None, str(exc))
        try:
            signing_key = self.keys.signing_key(key.key_id)
        except KeyError:
            chain.forget_nonce(key.address)
            return await self._abandon(request_id, decision, summary, "session_key.unavailable",
                                       "the session key was revoked before signing")
        tx = Eip1559Tx(call.chain_id, nonce, fees.max_priority_fee_per_gas, fees.max_fee_per_gas, gas,
                       call.to, call.value, call.data)
        signed = sign_eip1559(tx, signing_key)
        tx_hash = "0x" + signed.tx_hash.hex()
        result = records.outcome(records.SIGNED, request_id, decision, summary, tx_hash=tx_hash,
                                 chain_id=call.chain_id, sender=key.address, nonce=nonce,
                                 broadcast=self.broadcast)

        def record_signature(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE requests SET status='signed', outcome=?, tx_hash=?, raw_tx=? WHERE request_id=?",
                (json.dumps(result), tx_hash, signed.raw, request_id),
            )
            conn.execute("UPDATE spends SET state='committed' WHERE request_id=?", (request_id,))
            self.audit.append("sign.signed", {"request_id": request_id, "tx_hash": tx_hash, "sender": key.address,
                                              "key_id": key.key_id, "tx": tx.to_dict()})

        try:
            await self.writer.run(record_signature)
        except Exception:
            log.exception("could not record signature for %s", request_id)
            # The signature never left this process and its nonce is reused: the spend may go.
            chain.forget_nonce(key.address)
            self.ledger.release(request_id)
            raise RpcError(ErrorCode.UNAVAILABLE, "the audit log could not be written; nothing was sent") from None
        if self.broadcast:
            try:
                await chain.send_raw(signed.raw)
            except ChainError as exc:
                chain.forget_nonce(key.address)
                return await self._abandon(request_id, decision, summary, None, f"broadcast rejected: {exc}",
                                           tx_hash=tx_hash)
            self.watch_receipt(chain, request_id, tx_hash)
        return result

    async def _abandon(
        self, request_id: str, decision: Decision, summary: str, rule_id: str | None, reason: str, **extra: Any
    ) -> dict[str, Any]:
        """Nothing reached the chain: release the reservation and record why."""
        self.ledger.release(request_id)
        if rule_id is not None:
            denial = _deny(rule_id, reason, decision)
            result = records.outcome(records.DENIED, request_id, denial, summary, **extra)
        else:
            result = records.outcome(records.FAILED, request_id, decision, summary, error=reason, **extra)

        def record(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE requests SET status=?, outcome=? WHERE request_id=?",
                         (result["status"], json.dumps(result), request_id))
            conn.execute("UPDATE spends SET state='released' WHERE request_id=?", (request_id,))
            self.audit.append("sign.abandoned", {"request_id": request_id, "rule_id": rule_id, "reason": reason,
                                                 **{k: v for k, v in extra.items() if k == "tx_hash"}})

        await self.writer.run(record)
        return result

    def watch_receipt(self, chain: Chain, request_id: str, tx_hash: str) -> None:
        async def watch() -> None:
            try:
                receipt = await chain.receipt(tx_hash)
            except ChainError as exc:
                body = {"request_id": request_id, "tx_hash": tx_hash, "error": str(exc)}
                await self.writer.run(lambda conn: self.audit.append("tx.receipt_unknown", body))
                return
            body = {"request_id": request_id, "tx_hash": tx_hash, "status": int(receipt.get("status", 0)),
                    "block_number": int(receipt.get("blockNumber", 0)), "gas_used": int(receipt.get("gasUsed", 0))}

            def record(conn: sqlite3.Connection) -> None:
                conn.execute("UPDATE requests SET status=? WHERE request_id=?",
                             ("confirmed" if body["status"] == 1 else "reverted", request_id))
                self.audit.append("tx.receipt", body)

            await self.writer.run(record)

        task = asyncio.get_running_loop().create_task(watch())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- sign.status ------------------------------------------------------------------------

    def status_of(self, client: Client, request_id: str) -> dict[str, Any]:
        row = self.reader.execute(
            "SELECT client_id, status, outcome, expires_at FROM requests WHERE request_id=?", (request_id,)
        ).fetchone()
        if row is None or row[0] != client.client_id:
            raise RpcError(ErrorCode.NOT_FOUND, f"no request {request_id} for this client")
        body = json.loads(row[2]) if row[2] else {"status": row[1], "request_id": request_id}
        if row[1] == "pending_approval" and row[3] is not None and self.clock() >= row[3]:
            body = {**body, "status": records.EXPIRED}
        body["state"] = row[1]
        return body

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)


def _deny(rule_id: str, reason: str, base: Decision | None = None) -> Decision:
    finding = Finding(Outcome.DENY, rule_id, reason)
    return Decision(Outcome.DENY, rule_id, reason, (base.findings if base else ()) + (finding,))


def _conflict() -> RpcError:
    return RpcError(ErrorCode.IDEMPOTENCY_CONFLICT,
                    "this idempotency key was already used for a different request")
