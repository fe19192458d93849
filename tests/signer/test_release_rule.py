"""Hypothesis on the release rule: whatever a node answers about the signer's transactions, a spend
is released only when another of the signer's transactions at the same nonce has a receipt that
checks out, and a transaction's own checked receipt settles it with its spend still counted.

The real receipt watcher, ledger, writer and audit log, and the real `Chain` client, against a
local JSON-RPC server speaking the wire protocol that answers what each example scripts.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from policies.intent import NATIVE
from signer import records
from signer.chain import Chain
from signer.ledger import Ledger
from signer.receipts import InFlight, ReceiptWatcher
from signer.store.audit import AuditLog
from signer.store.db import connect, ensure_schema
from signer.store.writer import Writer
from signer.wire.settings import ChainSettings
from tests.conftest import throwaway_audit_keys

SENDER = "0x" + "5e" * 20
CHAIN_ID = 31337
VALID = ("success", "revert")  # the answers that are a receipt of the transaction asked about
ANSWERS = VALID + (
    "null",
    "other_hash",
    "other_sender",
    "bad_status",
    "bad_block_hash",
    "not_an_object",
    "error",
)


class ScriptedNode(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers: dict[str, str] = {}
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def reply(self, method: str, params: list) -> dict:
        if method == "eth_blockNumber":
            return {"result": "0x10"}
        asked = params[0]
        kind = self.answers.get(asked, "null")
        receipt = {
            "transactionHash": asked,
            "from": SENDER,
            "status": "0x1",
            "blockNumber": "0x10",
            "blockHash": "0x" + "cd" * 32,
            "gasUsed": "0x5208",
        }
        return {
            "success": {"result": receipt},
            "revert": {"result": {**receipt, "status": "0x0"}},
            "null": {"result": None},
            "other_hash": {"result": {**receipt, "transactionHash": "0x" + "ee" * 32}},
            "other_sender": {"result": {**receipt, "from": "0x" + "aa" * 20}},
            "bad_status": {"result": {**receipt, "status": "0x2"}},
            "bad_block_hash": {"result": {**receipt, "blockHash": "0x12"}},
            "not_an_object": {"result": [receipt]},
            "error": {"error": {"code": -32000, "message": "header not found"}},
        }[kind]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        node: ScriptedNode = self.server  # type: ignore[assignment]
        data = json.dumps(
            {"jsonrpc": "2.0", "id": request["id"], **node.reply(request["method"], request["params"])}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def node():
    server = ScriptedNode()
    yield server
    server.shutdown()
    server.server_close()


transactions = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=2),
        st.integers(min_value=1, max_value=10**18),
        st.sampled_from(ANSWERS),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(txs=transactions)
def test_a_spend_is_released_only_on_a_checked_receipt_of_another_transaction_at_its_nonce(node, txs):
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_example(node, Path(tmp), txs))


async def _example(node: ScriptedNode, tmp: Path, txs: list[tuple[int, int, str]]) -> None:
    conn = connect(tmp / "signer.db")
    ensure_schema(conn)
    audit = AuditLog(conn, tmp / "audit.anchor", keys=throwaway_audit_keys())
    writer = Writer(conn, on_commit=audit.write_anchor, on_rollback=audit.reload, checkpoint_every=None)
    reader = connect(tmp / "signer.db")
    ledger = Ledger()
    chain = Chain(ChainSettings(id=CHAIN_ID, name="scripted", rpc_url=node.url, dev=True))
    watcher = ReceiptWatcher(writer, audit, reader, ledger)
    flights = []
    try:
        for i, (nonce, amount, answer) in enumerate(txs):
            tx = InFlight(f"req_{i}", CHAIN_ID, "0x%064x" % (i + 1), SENDER, nonce)
            node.answers[tx.tx_hash] = answer
            ledger.add_spend(tx.request_id, CHAIN_ID, NATIVE, amount, None, 0.0)

            def insert(c, tx=tx, amount=amount):
                c.execute(
                    "INSERT INTO requests(request_id, client_id, idempotency_key, kind, request_hash,"
                    " created_at, status, outcome, chain_id, tx_hash) VALUES(?,?,?,?,?,?,?,?,?,?)",
                    (
                        tx.request_id,
                        "c",
                        tx.request_id,
                        "sign",
                        "h",
                        0.0,
                        records.UNCONFIRMED,
                        json.dumps({"sender": SENDER, "nonce": tx.nonce}),
                        CHAIN_ID,
                        tx.tx_hash,
                    ),
                )
                c.execute(
                    "INSERT INTO spends(request_id, chain_id, asset, amount, ts, state)"
                    " VALUES(?,?,?,?,?,'committed')",
                    (tx.request_id, CHAIN_ID, NATIVE, str(amount), 0.0),
                )

            await writer.run(insert)
            watcher.know(tx)
            flights.append((tx, amount, answer))
        settled = [await watcher.settle_once(chain, tx) for tx, _, _ in flights]

        counted = 0
        for (tx, amount, answer), done in zip(flights, settled):
            taken = any(
                other.nonce == tx.nonce and other.tx_hash != tx.tx_hash and a in VALID
                for other, _, a in flights
            )
            (status,) = reader.execute(
                "SELECT status FROM requests WHERE request_id=?", (tx.request_id,)
            ).fetchone()
            states = {
                s for (s,) in reader.execute("SELECT state FROM spends WHERE request_id=?", (tx.request_id,))
            }
            if answer in VALID:  # its own receipt checks out: mined, and it stays counted
                assert done and status == (records.CONFIRMED if answer == "success" else records.REVERTED)
                assert states == {"committed"}
            elif taken:  # another of the signer's transactions took its nonce: proven dead
                assert done and status == records.DROPPED and states == {"released"}
            else:  # anything else the node said proves nothing
                assert not done and status == records.UNCONFIRMED and states == {"committed"}
            counted += 0 if status == records.DROPPED else amount
        assert ledger.spent(CHAIN_ID, NATIVE, since=-1.0) == counted
        rejected = {"other_hash", "other_sender", "bad_status", "bad_block_hash", "not_an_object"}
        lies = reader.execute("SELECT count(*) FROM audit WHERE kind='tx.receipt_rejected'").fetchone()[0]
        assert (lies > 0) == any(a in rejected for _, _, a in flights)
    finally:
        await watcher.close()
        await chain.close()
        writer.close()
        audit.close()
        reader.close()
        conn.close()
