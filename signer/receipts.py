"""Following every signed transaction that left the signer until its fate is proven.

The release rule, the one place the spend of a sent transaction is ever given back: it is released
only when the signer proves the transaction can never be mined, i.e. its nonce is taken by another
transaction the signer knows: a receipt (checked against the hash the signer computed and the
sender it signed for) of another transaction the signer itself signed and recorded at the same
nonce, in a block at least `release_confirmations` deep. Nothing else counts: not a node's error
string ("transaction underpriced"), not a null receipt, not a timeout, not a transaction the node
says it dropped, not a nonce count the node reports.

Until then the transaction is `signed` or `unconfirmed` on its row, and its spends count in every
window however old they are (`Ledger.hold`): a transaction a node holds back can be mined at any
time. A receipt for the transaction itself settles it as `confirmed` or `reverted`; both keep the
spend counted ("reverted" is only the node's word), re-stamped at the moment the receipt was seen,
so a transaction mined late is counted in the windows it moved value in. A receipt naming another
hash or sender, or one the check endpoint disagrees with, is rejected (`tx.receipt_rejected`) and
the wait goes on.

Polling is fast for a while after the broadcast, then slow, until the fate is proven; a restarted
signer resumes following every row still in flight (`resume`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from signer import records
from signer.chain import Chain, ChainError, Receipt, ReceiptLie
from signer.ledger import Ledger
from signer.store import receipts as receipt_store
from signer.store.audit import AuditLog
from signer.store.db import Connection
from signer.store.writer import Writer

FAST_POLL_SECONDS = 0.25
FAST_PHASE_SECONDS = 120.0
SLOW_POLL_SECONDS = 15.0


@dataclass(frozen=True, slots=True)
class InFlight:
    """A signed transaction that left the signer: what its fate is checked against."""

    request_id: str
    chain_id: int
    tx_hash: str
    sender: str
    nonce: int


class ReceiptWatcher:
    def __init__(
        self,
        writer: Writer,
        audit: AuditLog,
        reader: Connection,
        ledger: Ledger,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.writer = writer
        self.clock = clock
        self.audit = audit
        self.reader = reader
        self.ledger = ledger
        self._background: set[asyncio.Task[None]] = set()
        self._following: dict[str, InFlight] = {}  # by request id: what `status` reports as in flight
        self._rejected: set[tuple[str, str]] = set()  # (request, reason) already on record
        # Every transaction that left the signer, by (chain, sender, nonce): where nonce-takers are found.
        self._at_nonce: dict[tuple[int, str, int], set[str]] = {}

    def know(self, tx: InFlight) -> None:
        """Record that `tx` left the signer: it may take its nonce from any other transaction."""
        self._at_nonce.setdefault((tx.chain_id, tx.sender.lower(), tx.nonce), set()).add(tx.tx_hash.lower())

    def watch(self, chain: Chain, tx: InFlight) -> None:
        """Follow `tx` in the background until it is proven mined or proven dead."""
        self.know(tx)
        if tx.request_id in self._following:
            return
        self._following[tx.request_id] = tx
        task = asyncio.get_running_loop().create_task(self._follow(chain, tx))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def resume(self, chains: dict[int, Chain], since: float) -> int:
        """At start-up: index every transaction recorded since `since` or still in flight (nonce-takers
        are among them) and follow again every one still in flight, however old. Returns how many."""
        rows = receipt_store.sent_since_or_in_flight(self.reader, since, records.IN_FLIGHT)
        found = [
            (status, InFlight(request_id, chain_id, tx_hash, sender, nonce))
            for request_id, status, chain_id, tx_hash, sender, nonce in rows
            if isinstance(sender, str) and isinstance(nonce, int)
        ]
        for _, tx in found:
            self.know(tx)
        following = [
            tx
            for status, tx in found
            if status in records.IN_FLIGHT and tx.chain_id in chains and self._broadcast(tx.request_id)
        ]
        for tx in following:
            self.watch(chains[tx.chain_id], tx)
        return len(following)

    def _broadcast(self, request_id: str) -> bool:
        """Did it leave the signer? With broadcasting off (benchmarks) nothing is ever sent."""
        return receipt_store.was_broadcast(self.reader, request_id)

    async def _follow(self, chain: Chain, tx: InFlight) -> None:
        fast_until = time.monotonic() + FAST_PHASE_SECONDS
        try:
            while not await self.settle_once(chain, tx):
                await asyncio.sleep(FAST_POLL_SECONDS if time.monotonic() < fast_until else SLOW_POLL_SECONDS)
        finally:
            self._following.pop(tx.request_id, None)

    def following(self) -> list[InFlight]:
        """The transactions being followed now, oldest first."""
        return list(self._following.values())

    async def settle_once(self, chain: Chain, tx: InFlight) -> bool:
        """One look at the chain: True once the transaction's fate is proven and on record."""
        receipt = await self._receipt(chain, tx, tx.tx_hash)
        if receipt is not None:
            await self._mined(tx, receipt)
            return True
        for sibling in self._siblings(tx):
            taken = await self._receipt(chain, tx, sibling)
            if taken is not None and await self._deep_enough(chain, taken):
                await self._dropped(tx, taken)
                return True
        return False

    @staticmethod
    async def _deep_enough(chain: Chain, taken: Receipt) -> bool:
        """Is the nonce-taking transaction's block buried deep enough that a reorg will not undo it?"""
        try:
            head = await chain.block_number()
        except ChainError:
            return False
        return head - taken.block_number + 1 >= chain.settings.confirmations_to_release

    async def _receipt(self, chain: Chain, tx: InFlight, tx_hash: str) -> Receipt | None:
        try:
            return await chain.receipt_for(tx_hash, tx.sender)
        except ReceiptLie as exc:
            if (tx.request_id, str(exc)) not in self._rejected:
                self._rejected.add((tx.request_id, str(exc)))
                body = {
                    "request_id": tx.request_id,
                    "tx_hash": tx.tx_hash,
                    "asked_tx_hash": tx_hash,
                    "error": str(exc),
                }
                await self.writer.run(lambda conn: self.audit.append("tx.receipt_rejected", body))
            return None
        except ChainError:  # unreachable or garbled: not a fact about the transaction, ask again later
            return None

    def _siblings(self, tx: InFlight) -> list[str]:
        """The other transactions the signer signed from the same account at the same nonce."""
        same = self._at_nonce.get((tx.chain_id, tx.sender.lower(), tx.nonce), set())
        return sorted(same - {tx.tx_hash.lower()})

    async def _mined(self, tx: InFlight, receipt: Receipt) -> None:
        status = records.CONFIRMED if receipt.status == 1 else records.REVERTED
        body = {
            "request_id": tx.request_id,
            "tx_hash": tx.tx_hash,
            "status": receipt.status,
            "block_number": receipt.block_number,
            "block_hash": receipt.block_hash,
            "gas_used": receipt.gas_used,
        }

        seen = self.clock()

        def record(conn: Connection) -> bool:
            # it moved value at some moment up to now: it counts from now (Ledger.settle)
            changed = receipt_store.settle_mined(conn, tx.request_id, status, seen, records.IN_FLIGHT)
            if changed:
                self.audit.append("tx.receipt", body)
            return changed

        if await self.writer.run(record):
            self.ledger.settle(tx.request_id, seen)

    async def _dropped(self, tx: InFlight, taken: Receipt) -> None:
        """Proven dead: its nonce is mined in another of the signer's transactions. Release its spend."""
        body = {
            "request_id": tx.request_id,
            "tx_hash": tx.tx_hash,
            "sender": tx.sender,
            "nonce": tx.nonce,
            "taken_by_tx_hash": taken.tx_hash,
            "block_number": taken.block_number,
            "block_hash": taken.block_hash,
        }

        def record(conn: Connection) -> bool:
            if not receipt_store.settle_dropped(conn, tx.request_id, records.DROPPED, records.IN_FLIGHT):
                return False  # settled otherwise meanwhile: nothing to release
            self.audit.append("tx.dropped", body)
            return True

        if await self.writer.run(record):
            self.ledger.release(
                tx.request_id
            )  # after the commit: a crash before it keeps the spend (fail closed)

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
