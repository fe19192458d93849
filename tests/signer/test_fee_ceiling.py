"""A lying RPC node cannot make a session key burn its balance in fees.

The signer process talks to anvil through a real HTTP proxy that answers the fee questions with
whatever the test says: a 4000 gwei tip is clamped to the chain's `max_priority_fee_gwei` (and the
clamp is on record), and a base fee that puts the max fee per gas past `max_fee_gwei` signs nothing.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import ValidationError

from bot.devchain import free_port, rpc
from signer.client import new_idempotency_key
from signer.settings import ChainSettings
from tests.conftest import FRIEND, balance, wait_receipt

pytestmark = pytest.mark.chain
GWEI = 10**9
MILLI = 10**15


class LyingNode:
    """Forwards JSON-RPC to anvil, except the fee answers named in `lies` (wei)."""

    def __init__(self, upstream: str) -> None:
        self.lies: dict[str, int] = {}
        node = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                data = json.dumps(node.answer(upstream, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, upstream: str, body: Any) -> Any:
        method = body.get("method") if isinstance(body, dict) else None
        if method == "eth_maxPriorityFeePerGas" and "tip" in self.lies:
            return {"jsonrpc": "2.0", "id": body["id"], "result": hex(self.lies["tip"])}
        request = urllib.request.Request(upstream, json.dumps(body).encode(), {"Content-Type": "application/json"})
        out = json.loads(urllib.request.urlopen(request, timeout=10).read())
        if method == "eth_getBlockByNumber" and "base_fee" in self.lies and out.get("result"):
            out["result"]["baseFeePerGas"] = hex(self.lies["base_fee"])
        return out


@pytest.fixture()
def node(anvil) -> Iterator[LyingNode]:
    lying = LyingNode(anvil.url)
    yield lying
    lying.server.shutdown()


def sign(stack, value: int) -> dict[str, Any]:
    return stack.call_sync(stack.client_token(f"bot{new_idempotency_key()[:8]}"), "sign.request",
                           {"idempotency_key": new_idempotency_key(),
                            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(value)}})


def test_a_tip_above_the_ceiling_is_clamped_and_the_clamp_is_on_record(make_stack, anvil, node):
    stack = make_stack(node.url).start()
    key = stack.funded_session_key()
    before = balance(anvil, key["address"])
    node.lies["tip"] = 4000 * GWEI
    result = sign(stack, MILLI)
    assert result["status"] == "signed"
    wait_receipt(anvil, result["tx_hash"])
    tx = rpc(anvil.url, "eth_getTransactionByHash", [result["tx_hash"]])
    assert int(tx["maxPriorityFeePerGas"], 16) == 100 * GWEI  # the default max_priority_fee_gwei
    paid = before - balance(anvil, key["address"])
    assert paid <= MILLI + 21_000 * int(tx["maxFeePerGas"], 16)  # before the fix: 0.085 ETH
    assert result["fee_clamped"] == {"node_priority_fee_per_gas": str(4000 * GWEI),
                                     "max_priority_fee_per_gas": str(100 * GWEI),
                                     "reason": result["fee_clamped"]["reason"]}
    signed = stack.call_sync(stack.admin_token, "audit.tail", {"n": 1, "kind": "sign.signed"})["entries"][0]
    assert signed["body"]["request_id"] == result["request_id"]
    assert signed["body"]["fee_clamped"]["node_priority_fee_per_gas"] == str(4000 * GWEI)
    conn = sqlite3.connect(stack.paths.db)
    try:
        (stored,) = conn.execute("SELECT outcome FROM requests WHERE request_id=?", (result["request_id"],)).fetchone()
    finally:
        conn.close()
    assert json.loads(stored)["fee_clamped"] == result["fee_clamped"]  # a replayed key answers with it too


def test_a_max_fee_above_the_ceiling_signs_nothing(make_stack, anvil, node):
    stack = make_stack(node.url).start()
    key = stack.funded_session_key()
    nonce = rpc(anvil.url, "eth_getTransactionCount", [key["address"], "pending"])
    node.lies["base_fee"] = 600 * GWEI  # 2 x 600 + tip > the default max_fee_gwei of 1000
    result = sign(stack, MILLI)
    assert (result["status"], result["rule_id"]) == ("denied", "chain.max_fee")
    assert "max_fee_gwei" in result["reason"] and "nothing was signed" in result["reason"]
    assert rpc(anvil.url, "eth_getTransactionCount", [key["address"], "pending"]) == nonce
    abandoned = stack.call_sync(stack.admin_token, "audit.tail", {"n": 1, "kind": "sign.abandoned"})["entries"][0]
    assert abandoned["body"]["request_id"] == result["request_id"]
    del node.lies["base_fee"]  # an honest answer again: the refused request held no room
    assert sign(stack, MILLI)["status"] == "signed"


def test_fee_ceilings_are_whole_gwei_per_chain_with_defaults():
    chain = ChainSettings(id=1, name="mainnet", rpc_url="https://rpc.example")
    assert (chain.max_priority_fee_wei, chain.max_fee_wei) == (100 * GWEI, 1000 * GWEI)
    l2 = ChainSettings(id=10, name="l2", rpc_url="https://rpc.example", max_priority_fee_gwei=0, max_fee_gwei=5)
    assert (l2.max_priority_fee_wei, l2.max_fee_wei) == (0, 5 * GWEI)
    with pytest.raises(ValidationError, match="max_priority_fee_gwei cannot exceed max_fee_gwei"):
        ChainSettings(id=1, name="x", rpc_url="https://rpc.example", max_priority_fee_gwei=2000)
