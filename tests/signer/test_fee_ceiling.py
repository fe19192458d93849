"""A lying RPC node cannot make a session key burn its balance in fees.

The signer process talks to anvil through a real HTTP proxy that answers the fee questions with
whatever the test says: a 4000 gwei tip is clamped to the chain's `max_priority_fee_gwei` (and the
clamp is on record), a base fee that puts the max fee per gas past `max_fee_gwei` signs nothing,
nor does a gas estimate that puts the gas limit past `max_gas`, nor a negative or malformed number.
"""

from __future__ import annotations

import asyncio
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
from policies.intent import Call
from signer.chain import Chain, ChainError, GasAboveCeiling, quantity
from signer.fees import Fees, InvalidFees, quote
from signer.tier1.main_tx import main_account_tx
from signer.wire.exchange import new_idempotency_key
from signer.wire.settings import ChainSettings
from tests.conftest import FRIEND, balance, wait_receipt

pytestmark = pytest.mark.chain
GWEI = 10**9
MILLI = 10**15


# What each lie replaces: the answer to a method, or (base_fee) a field of the latest block.
LIED_METHODS = {
    "tip": "eth_maxPriorityFeePerGas",
    "gas": "eth_estimateGas",
    "code": "eth_getCode",
    "nonce": "eth_getTransactionCount",
}


def _hex(value: int | str) -> str:
    return value if isinstance(value, str) else hex(value)


class LyingNode:
    """Forwards JSON-RPC to anvil, except the answers named in `lies` (ints are sent as hex, strings as is)."""

    def __init__(self, upstream: str) -> None:
        self.lies: dict[str, int | str] = {}
        self.receipt_fields: dict[str, Any] = {}
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
        for lie, lied_method in LIED_METHODS.items():
            if method == lied_method and lie in self.lies:
                return {"jsonrpc": "2.0", "id": body["id"], "result": _hex(self.lies[lie])}
        request = urllib.request.Request(
            upstream, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        out = json.loads(urllib.request.urlopen(request, timeout=10).read())
        if method == "eth_getBlockByNumber" and "base_fee" in self.lies and out.get("result"):
            out["result"]["baseFeePerGas"] = _hex(self.lies["base_fee"])
        if method == "eth_getTransactionReceipt" and out.get("result"):
            out["result"].update(self.receipt_fields)  # any JSON, not only hex
        return out


@pytest.fixture()
def node(anvil) -> Iterator[LyingNode]:
    lying = LyingNode(anvil.url)
    yield lying
    lying.server.shutdown()


def sign(stack, value: int, token: str | None = None) -> dict[str, Any]:
    return stack.call_sync(
        token or stack.client_token(f"bot{new_idempotency_key()[:8]}"),
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(value)},
        },
    )


def test_a_tip_above_the_ceiling_is_clamped_and_the_clamp_is_on_record(make_stack, anvil, node):
    stack = make_stack(node.url).start()
    key = stack.funded_session_key()
    before = balance(anvil, key["address"])
    node.lies["tip"] = 4000 * GWEI
    token = stack.client_token("botclamped")
    result = sign(stack, MILLI, token)
    assert result["status"] == "signed"
    wait_receipt(anvil, result["tx_hash"])
    tx = rpc(anvil.url, "eth_getTransactionByHash", [result["tx_hash"]])
    assert int(tx["maxPriorityFeePerGas"], 16) == 100 * GWEI  # the default max_priority_fee_gwei
    paid = before - balance(anvil, key["address"])
    assert paid <= MILLI + 21_000 * int(tx["maxFeePerGas"], 16)  # before the fix: 0.085 ETH
    assert result["fee_clamped"] == {
        "node_priority_fee_per_gas": str(4000 * GWEI),
        "max_priority_fee_per_gas": str(100 * GWEI),
        "reason": result["fee_clamped"]["reason"],
    }
    signed = stack.call_sync(stack.admin_token, "audit.tail", {"n": 1, "kind": "sign.signed"})["entries"][0]
    assert signed["body"]["request_id"] == result["request_id"]
    assert signed["body"]["fee_clamped"]["node_priority_fee_per_gas"] == str(4000 * GWEI)
    conn = sqlite3.connect(stack.paths.db)
    try:
        (stored,) = conn.execute(
            "SELECT outcome FROM requests WHERE request_id=?", (result["request_id"],)
        ).fetchone()
    finally:
        conn.close()
    assert json.loads(stored)["fee_clamped"] == result["fee_clamped"]  # a replayed key answers with it too
    # sign.status reads the stored outcome through the reply model: the clamp is one of its fields
    status = stack.call_sync(token, "sign.status", {"request_id": result["request_id"]})
    assert status["fee_clamped"] == result["fee_clamped"] and status["state"] in ("signed", "confirmed")


def test_a_max_fee_above_the_ceiling_signs_nothing(make_stack, anvil, node):
    stack = make_stack(node.url).start()
    key = stack.funded_session_key()
    nonce = rpc(anvil.url, "eth_getTransactionCount", [key["address"], "pending"])
    node.lies["base_fee"] = 600 * GWEI  # 2 x 600 + tip > the default max_fee_gwei of 1000
    result = sign(stack, MILLI)
    assert (result["status"], result["rule_id"]) == ("denied", "chain.max_fee")
    assert "max_fee_gwei" in result["reason"] and "nothing was signed" in result["reason"]
    assert rpc(anvil.url, "eth_getTransactionCount", [key["address"], "pending"]) == nonce
    abandoned = stack.call_sync(stack.admin_token, "audit.tail", {"n": 1, "kind": "sign.abandoned"})[
        "entries"
    ][0]
    assert abandoned["body"]["request_id"] == result["request_id"]
    del node.lies["base_fee"]  # an honest answer again: the refused request held no room
    assert sign(stack, MILLI)["status"] == "signed"


def test_fee_ceilings_are_whole_gwei_per_chain_with_defaults():
    chain = ChainSettings(id=1, name="mainnet", rpc_url="https://rpc.example")
    assert (chain.max_priority_fee_wei, chain.max_fee_wei) == (100 * GWEI, 1000 * GWEI)
    l2 = ChainSettings(
        id=10, name="l2", rpc_url="https://rpc.example", max_priority_fee_gwei=0, max_fee_gwei=5
    )
    assert (l2.max_priority_fee_wei, l2.max_fee_wei) == (0, 5 * GWEI)
    with pytest.raises(ValidationError, match="max_priority_fee_gwei cannot exceed max_fee_gwei"):
        ChainSettings(id=1, name="x", rpc_url="https://rpc.example", max_priority_fee_gwei=2000)


def pending_nonce(anvil, address: str) -> str:
    return rpc(anvil.url, "eth_getTransactionCount", [address, "pending"])


def test_a_gas_estimate_above_the_ceiling_signs_nothing(make_stack, anvil, node):
    """The review's repro: a node that says the friend has code and the call needs 30M gas. Padded to
    36M at the max fee ceiling that is 36 ETH of fees for one transaction; above `max_gas` it is none."""
    stack = make_stack(node.url).start()
    key = stack.funded_session_key()
    nonce = pending_nonce(anvil, key["address"])
    node.lies.update(code="0x6000", gas=30_000_000)
    result = sign(stack, MILLI)
    assert (result["status"], result["rule_id"]) == ("denied", "chain.max_gas"), result
    assert "max_gas: 3000000" in result["reason"] and "36000000" in result["reason"]
    assert "nothing was signed" in result["reason"]
    assert pending_nonce(anvil, key["address"]) == nonce  # nothing sent, and no nonce handed out
    abandoned = stack.call_sync(stack.admin_token, "audit.tail", {"n": 1, "kind": "sign.abandoned"})[
        "entries"
    ][0]
    assert abandoned["body"]["request_id"] == result["request_id"]
    assert abandoned["body"]["rule_id"] == "chain.max_gas"
    node.lies["gas"] = 2_000_000  # padded to 2.4M: within the ceiling; the refused request held no room
    result = sign(stack, MILLI)
    assert result["status"] == "signed", result
    conn = sqlite3.connect(stack.paths.db)
    try:
        states = [s for (s,) in conn.execute("SELECT state FROM spends ORDER BY id")]
    finally:
        conn.close()
    assert states == ["released", "committed"]


@pytest.mark.parametrize(
    "lie",
    [
        {"tip": "-0x1"},
        {"base_fee": "-0x3b9aca00"},
        {"tip": "0x-1"},
        {"base_fee": "12"},
        {"code": "0x6000", "gas": "-0x5208"},
        {"code": "0x6000", "gas": "0x"},
        {"nonce": "-0x1"},
        {"tip": "0x" + "f" * 65},
    ],
)
def test_a_negative_or_malformed_number_from_the_node_signs_nothing(make_stack, anvil, node, lie):
    stack = make_stack(node.url).start()
    key = stack.funded_session_key()
    nonce = pending_nonce(anvil, key["address"])
    node.lies.update(lie)
    result = sign(stack, MILLI)
    assert result["status"] == "failed", result
    assert "malformed" in result["error"] and "-0x" not in result["error"]  # the value is not echoed
    assert pending_nonce(anvil, key["address"]) == nonce
    node.lies.clear()
    assert sign(stack, MILLI)["status"] == "signed"


def test_the_gas_ceiling_is_per_chain_with_a_default():
    chain = ChainSettings(id=1, name="mainnet", rpc_url="https://rpc.example")
    assert chain.max_gas == 3_000_000
    assert ChainSettings(id=1, name="x", rpc_url="https://rpc.example", max_gas=21_001).max_gas == 21_001
    for bad in (21_000, 0, -1):
        with pytest.raises(ValidationError, match="max_gas"):
            ChainSettings(id=1, name="x", rpc_url="https://rpc.example", max_gas=bad)


def test_hex_quantities_from_the_node_are_strict():
    assert [quantity(v, "x") for v in ("0x0", "0x1", "0xAbC", "0x" + "f" * 64)] == [0, 1, 0xABC, 2**256 - 1]
    for bad in (
        "-0x1",
        "0x-1",
        "0x",
        "1",
        " 0x1",
        "0x1 ",
        "0x_1",
        "0X1",
        "0x" + "1" * 65,
        "0x１",
        1,
        None,
        [],
        {},
    ):
        with pytest.raises(ChainError, match="malformed x"):
            quantity(bad, "x")


def test_fees_are_never_negative_and_the_max_fee_never_below_the_tip():
    settings_ = ChainSettings(id=1, name="x", rpc_url="https://rpc.example")
    assert quote(10 * GWEI, 2 * GWEI, settings_) == Fees(22 * GWEI, 2 * GWEI, 2 * GWEI)
    for base, tip in ((-1, GWEI), (GWEI, -1)):
        with pytest.raises(InvalidFees):
            quote(base, tip, settings_)
    with pytest.raises(InvalidFees):
        Fees(GWEI, 2 * GWEI)
    with pytest.raises(InvalidFees):
        Fees(GWEI, -1)


class ScriptedRpc:
    """An RPC client that answers from a table: the review's in-process repro."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    async def call(self, method: str, *params: Any, retry: bool = True) -> Any:
        return self.answers[method]

    def close(self) -> None:
        pass


def scripted_chain(answers: dict[str, Any]) -> Chain:
    chain = Chain(ChainSettings(id=1, name="main", rpc_url="http://127.0.0.1:1"))
    chain.rpc = ScriptedRpc(answers)  # type: ignore[assignment]
    return chain


def test_the_reviews_repro_in_process():
    chain = scripted_chain(
        {
            "eth_getCode": "0x6000",
            "eth_estimateGas": hex(30_000_000),
            "eth_getBlockByNumber": {"baseFeePerGas": hex(450 * GWEI)},
            "eth_maxPriorityFeePerGas": hex(100 * GWEI),
        }
    )
    with pytest.raises(GasAboveCeiling, match="max_gas"):
        asyncio.run(chain.gas_for("0x" + "11" * 20, "0x" + "22" * 20, 0, b"\x01"))
    chain.rpc.answers["eth_estimateGas"] = hex(2_500_000)  # 3M padded: the most it may be
    assert asyncio.run(chain.gas_for("0x" + "11" * 20, "0x" + "22" * 20, 0, b"\x01")) == 3_000_000
    for block in ({"baseFeePerGas": "-0x1"}, None, [], {"baseFeePerGas": 7}):
        negative = scripted_chain({"eth_getBlockByNumber": block, "eth_maxPriorityFeePerGas": hex(GWEI)})
        with pytest.raises(ChainError):
            asyncio.run(negative.fees())
    pre_london = scripted_chain({"eth_getBlockByNumber": {}, "eth_maxPriorityFeePerGas": hex(GWEI)})
    assert asyncio.run(pre_london.fees()).max_fee_per_gas == GWEI


MAIN = "0x90f79bf6eb2c8f870365e4b3f5e1a2b2c3d4e5f6"  # a main account the signer only prepares for


def _main_tx(node: LyingNode, max_gas: int) -> dict[str, Any] | None:
    chain = Chain(ChainSettings(id=31337, name="anvil", rpc_url=node.url, dev=True, max_gas=max_gas))
    try:
        return asyncio.run(main_account_tx(chain, MAIN, Call(chain_id=31337, to=FRIEND, value=MILLI)))
    finally:
        asyncio.run(chain.close())


def test_the_main_accounts_transaction_keeps_to_the_gas_ceiling_too(node):
    """Tier 1: the companion is asked to sign what the signer prepared; a node asking more gas than
    `max_gas` gets nothing prepared (the request can only be denied), and the unsimulated fallback
    never exceeds the ceiling either."""
    node.lies.update(code="0x6000", gas=30_000_000)
    assert _main_tx(node, 3_000_000) is None
    node.lies["gas"] = "0x"  # an answer that is no estimate: the unsimulated fallback
    fallback = _main_tx(node, 100_000)
    assert fallback is not None and fallback["gas_limit"] == 100_000 and fallback["gas_simulated"] is False


@pytest.mark.parametrize(
    "field, value", [("status", True), ("blockNumber", [1]), ("gasUsed", -5), ("status", "0x-1")]
)
def test_a_malformed_receipt_field_is_a_chain_error(node, anvil, field, value):
    chain = Chain(ChainSettings(id=31337, name="anvil", rpc_url=node.url, dev=True))
    tx_hash = rpc(
        anvil.url,
        "eth_sendTransaction",
        [{"from": rpc(anvil.url, "eth_accounts", [])[0], "to": FRIEND, "value": "0x1"}],
    )
    wait_receipt(anvil, tx_hash)
    node.receipt_fields = {field: value}
    try:
        with pytest.raises(ChainError, match="malformed"):
            asyncio.run(chain.receipt(tx_hash, timeout=5))
    finally:
        asyncio.run(chain.close())
