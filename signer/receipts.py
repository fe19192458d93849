"""Following a broadcast transaction to its receipt, off the request path.

The request already replied (signed, tx hash); the receipt, or the failure to get one, is written
to the request's status and the audit log when it comes.
"""

from __future__ import annotations

import asyncio
import sqlite3

from signer.chain import Chain, ChainError
from signer.store.audit import AuditLog
from signer.store.writer import Writer


class ReceiptWatcher:
    def __init__(self, writer: Writer, audit: AuditLog) -> None:
        self.writer = writer
        self.audit = audit
        self._background: set[asyncio.Task] = set()

    def watch(self, chain: Chain, request_id: str, tx_hash: str) -> None:
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

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
