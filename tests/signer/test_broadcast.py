"""A flaky hop between the signer and its node: a lost answer to a broadcast never frees the spend.

A real anvil sits behind a small HTTP relay that can lose the answer to `eth_sendRawTransaction`
after the node took it (and the answers to the signer's follow-up lookup), refuse it itself, or
drop it unsent. No answer of the node releases the reservation: only another of the signer's
transactions mined at the same nonce does.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from signer.wire.exchange import new_idempotency_key
from tests.conftest import FRIEND, balance, rpc

pytestmark = pytest.mark.chain
STEP = 10**16  # the dev policy's per-transaction limit; five fill its 24 h window


class Relay(ThreadingHTTPServer):
    """Forwards JSON-RPC to the node; `mode` decides what happens to eth_sendRawTransaction."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream, self.mode = upstream, "pass"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        mode = self.server.mode  # type: ignore[attr-defined]
        if b"eth_getTransactionByHash" in body:  # the signer asking whether the node has it after all
            mode = "drop_unsent" if mode == "blackout" else "pass"
        elif b"eth_sendRawTransaction" not in body:
            mode = "pass"
        if mode == "refuse":  # the node's own kind of refusal, for a transaction it never saw
            reply = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": json.loads(body)["id"],
                    "error": {"code": -32000, "message": "nonce too low"},
                }
            ).encode()
        elif mode == "drop_unsent":
            return self._hang_up()
        else:
            request = urllib.request.Request(
                self.server.upstream,
                data=body,  # type: ignore[attr-defined]
                headers={"Content-Type": "application/json"},
            )
            reply = urllib.request.urlopen(request, timeout=10).read()
            if mode in ("lose_answer", "blackout"):  # the node took it; its answer never comes back
                return self._hang_up()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def _hang_up(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture()
def relayed(make_stack, anvil, tmp_path):
    relay = Relay(anvil.url)
    stack = make_stack(rpc_url=relay.url).start()
    stack.funded_session_key()
    yield relay, stack, stack.client_token("bot")
    relay.shutdown()


def send(stack, token: str, value: int = STEP) -> dict:
    return stack.call_sync(
        token,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(value)},
        },
    )


def test_a_lost_answer_for_a_transaction_the_node_has_is_a_plain_broadcast(relayed, anvil):
    relay, stack, bot = relayed
    relay.mode = "lose_answer"
    reply = send(stack, bot)
    assert reply["status"] == "signed" and "broadcast_unknown" not in reply
    assert int(rpc(anvil.url, "eth_getTransactionReceipt", [reply["tx_hash"]])["status"], 16) == 1


def test_lost_answers_keep_every_spend_counted_and_the_limit_holds_on_chain(relayed, anvil):
    relay, stack, bot = relayed
    before = balance(anvil, FRIEND)
    relay.mode = "blackout"  # the node takes each one, and neither its answer nor a later lookup comes back
    replies = [send(stack, bot) for _ in range(6)]
    assert [r["status"] for r in replies] == ["signed"] * 5 + [
        "pending_approval"
    ]  # over the window: needs you
    assert all("may still be mined" in r["broadcast_unknown"] for r in replies[:5])
    assert replies[5]["rule_id"] == "limit.window.24h"  # the window is full: nothing was released
    for reply in replies[:5]:
        assert int(rpc(anvil.url, "eth_getTransactionReceipt", [reply["tx_hash"]])["status"], 16) == 1
    assert balance(anvil, FRIEND) - before == 5 * STEP  # exactly the limit, never more
    unknown = stack.call_sync(stack.admin_token, "audit.tail", {"n": 50, "kind": "sign.broadcast_unknown"})
    assert len(unknown["entries"]) == 5


def test_an_answer_lost_before_the_node_saw_it_still_keeps_the_spend(relayed, anvil):
    relay, stack, bot = relayed
    relay.mode = "drop_unsent"
    lost = send(stack, bot)
    assert lost["status"] == "signed" and lost["broadcast_unknown"]
    assert rpc(anvil.url, "eth_getTransactionByHash", [lost["tx_hash"]]) is None
    relay.mode = "pass"
    statuses = [send(stack, bot)["status"] for _ in range(5)]
    assert statuses == ["signed"] * 4 + ["pending_approval"]  # the lost one still counts against the window


def test_a_refusal_holds_the_spend_until_another_transaction_takes_its_nonce(relayed, anvil):
    relay, stack, bot = relayed
    relay.mode = "refuse"
    refused = send(stack, bot)
    assert refused["status"] == "signed" and "nonce too low" in refused["broadcast_unknown"]
    assert (
        stack.call_sync(bot, "sign.status", {"request_id": refused["request_id"]})["state"] == "unconfirmed"
    )
    relay.mode = "pass"
    before = balance(anvil, FRIEND)
    filler = send(stack, bot, STEP - 1)  # the node said it never saw the first: the next one gets its nonce
    assert filler["nonce"] == refused["nonce"] and filler["tx_hash"] != refused["tx_hash"]
    dropped = wait_state(stack, bot, refused["request_id"], "dropped")  # its nonce is mined: it can never be
    assert dropped["tx_hash"] == refused["tx_hash"]
    assert [send(stack, bot)["status"] for _ in range(4)] == ["signed"] * 4  # and its spend was released
    assert balance(anvil, FRIEND) - before == 5 * STEP - 1
    proof = stack.call_sync(stack.admin_token, "audit.tail", {"n": 50, "kind": "tx.dropped"})["entries"]
    assert [(e["body"]["tx_hash"], e["body"]["taken_by_tx_hash"]) for e in proof] == [
        (refused["tx_hash"], filler["tx_hash"])
    ]


def wait_state(stack, token: str, request_id: str, state: str, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        reply = stack.call_sync(token, "sign.status", {"request_id": request_id})
        if reply["state"] == state or time.monotonic() > deadline:
            assert reply["state"] == state, reply
            return reply
        time.sleep(0.1)
