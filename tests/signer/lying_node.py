"""An Ethereum JSON-RPC node that lies on demand: a real HTTP server in front of a real anvil.

Every call is forwarded to anvil and its true answer is then bent according to the switches set
on the server (all off: an honest relay). The lies are the ones a hostile or broken node can tell
the signer:

- `refuse_then_hide`: answer `eth_sendRawTransaction` with "transaction underpriced" although the
  transaction WAS handed to anvil (and is mined), then deny knowing it: `eth_getTransactionByHash`
  and `eth_getTransactionReceipt` return null for it;
- `hold`: answer "transaction underpriced" and keep the transaction instead of forwarding it;
  `release_held(reverse=True)` hands them to anvil later, in the reverse order (a reorder);
- `nonce_lie`: a function from the true `eth_getTransactionCount` to the one told;
- `receipt_lie`: a function from (asked hash, true receipt or None) to the receipt told;
- `chain_id_lie`: the chain id `eth_chainId` answers instead of anvil's (another chain's node);
- `drop_connections`: close every connection after its reply, so each call arrives on a new one
  (a node restarted or swapped behind the same URL);
- `call_lie`: a function from (the eth_call's call object, true result) to the result told (a quote);
- `simulate_lie`: a function from the true `eth_simulateV1` result to the one told;
- `honest()`: every switch off again (hidden hashes become visible again).

`asked` counts the questions about each transaction hash (`eth_getTransactionByHash` and
`eth_getTransactionReceipt`), so a test can wait until the signer has asked again instead of sleeping.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LyingNode(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.lock = threading.Lock()
        self._open: set[Any] = set()  # the connections being served
        self._open_lock = threading.Lock()
        self.honest()
        self.sent: list[str] = []  # hashes of every transaction handed to anvil through this node
        self.asked: Counter[str] = Counter()  # questions about each (lowercase) hash, kept across honest()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    def restart_as(self, chain_id: int | None) -> None:
        """The node restarts (as another chain's when `chain_id` is set): every open connection is
        dropped, as a restarted process drops them, and each later call arrives on a new one."""
        self.chain_id_lie, self.drop_connections = chain_id, True
        with self._open_lock:
            for sock in list(self._open):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def honest(self) -> None:
        self.refuse_then_hide = False
        self.hold = False
        self.held: list[str] = []  # raw transactions kept back, in arrival order
        self.hidden: set[str] = set()
        self.nonce_lie: Callable[[int], int] | None = None
        self.receipt_lie: Callable[[str, dict | None], dict | None] | None = None
        self.chain_id_lie: int | None = None
        self.drop_connections = False
        self.chain_id_asked = 0  # eth_chainId calls answered, truthfully or not
        self.call_lie: Callable[[dict, Any], Any] | None = None
        self.simulate_lie: Callable[[Any], Any] | None = None

    def forward(self, method: str, params: list[Any]) -> dict[str, Any]:
        """The true answer of anvil, as a JSON-RPC reply object."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        request = urllib.request.Request(
            self.upstream, data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - loopback anvil
            return json.loads(reply.read())

    def wait_asked_again(self, hashes: Iterable[str], times: int = 2, timeout: float = 20.0) -> None:
        """Until the signer has asked about every one of `hashes` `times` more times than so far: it has
        seen whatever this node now tells about them (its watcher polls; this waits for the polls)."""
        with self.lock:
            want = {h.lower(): self.asked[h.lower()] + times for h in hashes}
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                behind = {h: n - self.asked[h] for h, n in want.items() if self.asked[h] < n}
            if not behind:
                return
            assert time.monotonic() < deadline, f"the signer did not ask about these again: {behind}"
            time.sleep(0.02)

    def release_held(self, *, reverse: bool) -> list[dict[str, Any]]:
        """Hand the kept transactions to anvil now (newest first when `reverse`); they stay hidden."""
        with self.lock:
            held, self.held = self.held, []
        answers = []
        for raw in reversed(held) if reverse else held:
            answer = self.forward("eth_sendRawTransaction", [raw])
            if "result" in answer:
                self.sent.append(answer["result"])
                self.hidden.add(answer["result"].lower())
            answers.append(answer)
        return answers

    def answer(self, method: str, params: list[Any]) -> dict[str, Any]:
        """What this node tells the signer: the truth, bent by whichever lies are switched on."""
        if method == "eth_sendRawTransaction" and self.hold:
            with self.lock:
                self.held.append(params[0])
            return _error("transaction underpriced")
        if method == "eth_sendRawTransaction":
            truth = self.forward(method, params)
            if "result" in truth:
                self.sent.append(truth["result"])
            if not self.refuse_then_hide:
                return truth
            if "result" in truth:
                self.hidden.add(truth["result"].lower())
            return _error("transaction underpriced")
        truth = self.forward(method, params)
        if method == "eth_chainId":
            self.chain_id_asked += 1
            if self.chain_id_lie is not None:
                return {"jsonrpc": "2.0", "id": 1, "result": hex(self.chain_id_lie)}
        if method in ("eth_getTransactionByHash", "eth_getTransactionReceipt"):
            asked = str(params[0]).lower()
            result = None if asked in self.hidden else truth.get("result")
            if method == "eth_getTransactionReceipt" and self.receipt_lie is not None:
                result = self.receipt_lie(asked, truth.get("result"))
            with self.lock:  # counted once the answer is decided: a waiter then knows what was told
                self.asked[asked] += 1
            return {"jsonrpc": "2.0", "id": 1, "result": result}
        if method == "eth_simulateV1" and self.simulate_lie is not None and "result" in truth:
            return {"jsonrpc": "2.0", "id": 1, "result": self.simulate_lie(truth["result"])}
        if method == "eth_call" and self.call_lie is not None and "result" in truth:
            return {"jsonrpc": "2.0", "id": 1, "result": self.call_lie(params[0], truth["result"])}
        if method == "eth_getTransactionCount" and self.nonce_lie is not None and "result" in truth:
            told = max(0, self.nonce_lie(int(truth["result"], 16)))
            return {"jsonrpc": "2.0", "id": 1, "result": hex(told)}
        return truth


def _error(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": message}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        node: LyingNode = self.server  # type: ignore[assignment]
        reply = {**node.answer(request["method"], request.get("params", [])), "id": request.get("id")}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if node.drop_connections:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)
