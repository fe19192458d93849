"""The signer's nonce quote (`approvals.state`): it carries the mined count next to the pending one,
both under the signature, since only the mined count may settle a journal entry.

Each chain is a real `Chain` client talking JSON-RPC over HTTP to a small local node that answers
`eth_getTransactionCount` per block tag (or fails, or garbles the count)."""

from __future__ import annotations

import asyncio
import json
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from companion_bridge.companion.quotes import NonceQuote, verified_quote
from signer.chain import Chain
from signer.tier1.approvals import Approvals
from signer.wire.messages import signed_message
from signer.wire.settings import ChainSettings

MAIN = "0x" + "11" * 20
DOWN = object()  # the node answers with a JSON-RPC error


class CountingNode(ThreadingHTTPServer):
    """A JSON-RPC node that knows one thing: the main account's transaction count per block tag."""

    daemon_threads = True

    def __init__(self, **counts: object) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.counts = counts
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, params = body["method"], body["params"]
        assert method == "eth_getTransactionCount" and params[0] == MAIN, body
        value = self.server.counts[params[1]]  # type: ignore[attr-defined]
        answer = {"error": {"code": -32000, "message": "down"}} if value is DOWN else {"result": value}
        data = json.dumps({"jsonrpc": "2.0", "id": body["id"], **answer}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def nodes() -> Iterator[list[CountingNode]]:
    started: list[CountingNode] = []
    yield started
    for node in started:
        node.shutdown()
        node.server_close()


def approvals_with(nodes: list[CountingNode], counts: dict[int, dict[str, object]]) -> tuple[Approvals, str]:
    """An Approvals holding only what state_for_signing reads, with a real Chain per chain id."""
    key = Ed25519PrivateKey.generate()
    chains = {}
    for chain_id, per_tag in counts.items():
        node = CountingNode(**per_tag)
        nodes.append(node)
        chains[chain_id] = Chain(
            ChainSettings(id=chain_id, name=f"c{chain_id}", rpc_url=node.url), timeout=2.0
        )
    approvals = object.__new__(Approvals)
    approvals.engine = types.SimpleNamespace(
        frozen=False, chains=chains, audit=types.SimpleNamespace(committed=(0, "0" * 64), committed_epoch=0)
    )
    approvals.devices = types.SimpleNamespace(revision=1, main_account=lambda: MAIN)
    approvals.kill_switch = types.SimpleNamespace(current_id=lambda: "")
    approvals.identity = types.SimpleNamespace(
        sign=lambda domain, body: key.sign(signed_message(domain, body)).hex()
    )
    approvals.clock = lambda: 5000.0
    return approvals, key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def test_the_quote_carries_the_mined_count_under_the_signature(nodes):
    approvals, public = approvals_with(
        nodes,
        {
            1: {"pending": "0x7", "latest": "0x5"},  # two in the mempool
            2: {"pending": "0x3", "latest": "-0x1"},  # a garbled mined count: left out, the pending one kept
            3: {"pending": DOWN, "latest": "0x9"},  # pending unreadable: only the mined count
            4: {"pending": DOWN, "latest": DOWN},
        },
    )
    state = asyncio.run(approvals.state_for_signing())
    assert state["main_nonce"] == {"1": 7, "2": 3} and state["main_nonce_mined"] == {"1": 5, "3": 9}
    assert verified_quote(state, public) == NonceQuote(MAIN, {1: 7, 2: 3}, 5000.0, {1: 5, 3: 9})
    assert verified_quote({**state, "main_nonce_mined": {"1": 7}}, public) is None  # cannot be bumped


def test_without_a_main_account_nothing_is_read(nodes):
    approvals, _public = approvals_with(nodes, {1: {"pending": "0x7", "latest": "0x5"}})
    approvals.devices.main_account = lambda: None
    state = asyncio.run(approvals.state_for_signing())
    assert state["main_nonce"] == {} and state["main_nonce_mined"] == {}
