"""Every forged, replayed, mismatched, late or revoked answer is refused, audited, and signs nothing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from nacl.signing import SigningKey

from companion_bridge.companion.client import Choice, Companion, CompanionError
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError
from signer.wire.messages import APPROVAL_DOMAIN, answer_body, signed_message
from signer.wire.protocol import Scope
from tests.companion.conftest import MAIN_PASS, Tier1, bridge_of, own_tier1, request_for, transfer
from tests.conftest import FRIEND, STRANGER, balance, rpc

pytestmark = [pytest.mark.chain]
OVER_LIMIT = 2 * 10**16


@pytest.fixture()
def tier1(shared_tier1):
    """This module's tests share one signer and bridge; each pairs its own device."""
    return shared_tier1


async def escalate(tier1: Tier1, companion: Companion, to: str = FRIEND, value: int = OVER_LIMIT) -> dict:
    [pending] = await tier1.submit(transfer(to, value))
    assert pending["status"] == "pending_approval"
    return await request_for(companion, pending["request_id"])


async def refused(companion: Companion, params: dict, why: str) -> None:
    with pytest.raises(CompanionError) as err:
        await companion.call("approvals.answer", params)
    assert why in err.value.message, err.value.message


def main_nonce(tier1: Tier1, companion: Companion) -> int:
    return int(rpc(tier1.anvil.url, "eth_getTransactionCount", [companion.wallet.main_address, "latest"]), 16)


async def assert_nothing_signed(
    tier1: Tier1, companion: Companion, request_id: str, reasons: list[str], nonce_before: int
) -> None:
    assert main_nonce(tier1, companion) == nonce_before, "the main account sent something"
    row = tier1.stack.paths.db
    import sqlite3

    with sqlite3.connect(row) as conn:
        status = conn.execute(
            "SELECT status, tx_hash FROM requests WHERE request_id=?", (request_id,)
        ).fetchone()
    assert status == ("pending_approval", None)
    audit = await tier1.stack.call(tier1.admin, "audit.tail", {"n": 100, "kind": "approval.refused"})
    logged = [e["body"]["reason"] for e in audit["entries"]]
    for reason in reasons:
        assert any(reason in r for r in logged), (reason, logged)


def run(tier1: Tier1, body) -> None:
    async def scenario():
        companion = await tier1.paired()
        try:
            await body(companion)
        finally:
            await companion.close()

    asyncio.run(scenario())


def test_forged_device_signature_is_refused(tier1):
    async def body(companion: Companion):
        nonce = main_nonce(tier1, companion)
        request = await escalate(tier1, companion)
        params = companion.build_answer(request, Choice("approve", bytearray(MAIN_PASS)))
        forger = SigningKey.generate()
        message = signed_message(
            APPROVAL_DOMAIN,
            answer_body(
                request["request_id"],
                params["request_hash"],
                "approve",
                request["expires_at"],
                params["device_id"],
                "0x" + "00" * 32,
            ),
        )
        params["signature"] = forger.sign(message).signature.hex()
        await refused(companion, params, "device signature does not verify")
        await assert_nothing_signed(
            tier1, companion, request["request_id"], ["device signature does not verify"], nonce
        )

    run(tier1, body)


def test_replayed_approval_is_refused(tier1, anvil):
    async def body(companion: Companion):
        nonce = main_nonce(tier1, companion)
        request = await escalate(tier1, companion)
        params = companion.build_answer(request, Choice("approve", bytearray(MAIN_PASS)))
        before = balance(anvil, FRIEND)
        first = await companion.call("approvals.answer", params)
        assert first["status"] == "signed"
        await refused(companion, params, "already answered")
        deadline = time.monotonic() + 20
        while balance(anvil, FRIEND) == before:  # the approved transfer is mined
            assert time.monotonic() < deadline, "the approved transfer was never mined"
            await asyncio.sleep(0.02)
        assert balance(anvil, FRIEND) - before == OVER_LIMIT  # once, not twice
        assert main_nonce(tier1, companion) == nonce + 1

    run(tier1, body)


def test_approval_of_request_a_used_for_request_b_is_refused(tier1):
    async def body(companion: Companion):
        nonce = main_nonce(tier1, companion)
        a = await escalate(tier1, companion, value=OVER_LIMIT)
        b = await escalate(tier1, companion, value=OVER_LIMIT + 1)
        params = companion.build_answer(a, Choice("approve", bytearray(MAIN_PASS)))
        params["request_id"] = b["request_id"]
        await refused(companion, params, "different request")
        params["request_hash"] = companion.build_answer(b, Choice("deny"))["request_hash"]
        params["expires_at"] = b["expires_at"]
        await refused(companion, params, "device signature does not verify")
        await assert_nothing_signed(tier1, companion, b["request_id"], ["different request"], nonce)

    run(tier1, body)


MISMATCHES = [
    ("to", STRANGER, "to differs"),
    ("value", str(OVER_LIMIT * 10), "value differs"),
    ("nonce", 7, "nonce differs"),
    ("data", "0xdeadbeef", "data differs"),
    ("chain_id", 1, "chain_id differs"),
    ("gas_limit", 10_000_000, "gas limit is outside"),
    ("max_fee_per_gas", str(10**15), "fees exceed"),
]


def test_signed_tx_that_differs_from_the_approved_request_is_refused(tier1):
    async def body(companion: Companion):
        nonce = main_nonce(tier1, companion)
        request = await escalate(tier1, companion)
        digest = companion.build_answer(request, Choice("deny"))["request_hash"]
        for field, value, why in MISMATCHES:
            # A companion that signs something other than what it was sent (a bug, or a stolen device
            # key with the main key): the signer's field check is the last line, so test it alone.
            raw = companion.wallet.sign_transaction({**request["tx"], field: value}, bytearray(MAIN_PASS))
            params = companion.build_answer(request, Choice("deny")) | {
                "action": "approve",
                "raw_tx": "0x" + raw.hex(),
            }
            # A properly device-signed answer around the wrong tx: only the field check can catch it.
            message = signed_message(
                APPROVAL_DOMAIN,
                answer_body(
                    request["request_id"],
                    digest,
                    "approve",
                    request["expires_at"],
                    params["device_id"],
                    _tx_hash(params["raw_tx"]),
                ),
            )
            params |= {"request_hash": digest, "signature": companion.wallet.device_sign(message)}
            await refused(companion, params, why)
        await assert_nothing_signed(
            tier1, companion, request["request_id"], [m[2] for m in MISMATCHES], nonce
        )

    run(tier1, body)


def test_tx_signed_by_another_key_is_refused(tier1):
    async def body(companion: Companion):
        nonce = main_nonce(tier1, companion)
        request = await escalate(tier1, companion)
        other = tier1.new_wallet("other", fresh_key=True)
        raw = other.sign_transaction({**request["tx"], "from": other.main_address}, bytearray(MAIN_PASS))
        digest = companion.build_answer(request, Choice("deny"))["request_hash"]
        message = signed_message(
            APPROVAL_DOMAIN,
            answer_body(
                request["request_id"],
                digest,
                "approve",
                request["expires_at"],
                companion.wallet.device_id,
                _tx_hash("0x" + raw.hex()),
            ),
        )
        params = {
            "request_id": request["request_id"],
            "request_hash": digest,
            "device_id": companion.wallet.device_id,
            "action": "approve",
            "expires_at": request["expires_at"],
            "raw_tx": "0x" + raw.hex(),
            "signature": companion.wallet.device_sign(message),
        }
        await refused(companion, params, "signer differs")
        await assert_nothing_signed(tier1, companion, request["request_id"], ["signer differs"], nonce)

    run(tier1, body)


def test_revoked_device_cannot_answer_and_is_disconnected(tier1):
    async def body(companion: Companion):
        nonce = main_nonce(tier1, companion)
        request = await escalate(tier1, companion)
        params = companion.build_answer(request, Choice("approve", bytearray(MAIN_PASS)))
        await tier1.stack.call(tier1.admin, "companion.revoke", {"device_id": companion.wallet.device_id})
        await asyncio.wait_for(companion.closed.wait(), 5)  # the bridge dropped it at once
        # Straight to the signer (as a compromised bridge would): still refused.
        bridge_token = tier1.stack.client_token("bridge2", scope=Scope.BRIDGE)
        async with SignerClient(tier1.stack.socket, bridge_token) as raw:
            with pytest.raises(SignerError) as err:
                await raw.call("approvals.answer", params)
        assert "revoked" in err.value.message
        with pytest.raises(CompanionError):
            await Companion(companion.wallet, tier1.bridge.url).login()
        await assert_nothing_signed(tier1, companion, request["request_id"], ["revoked"], nonce)

    run(tier1, body)


def test_expired_request_is_refused(make_stack, tmp_path, anvil):
    with own_tier1(make_stack, tmp_path, anvil, signer={"pending_ttl_seconds": 2}) as tier1:

        async def body(companion: Companion):
            nonce = main_nonce(tier1, companion)
            request = await escalate(tier1, companion)
            params = companion.build_answer(request, Choice("approve", bytearray(MAIN_PASS)))
            await asyncio.sleep(max(0.0, request["expires_at"] - time.time()) + 0.1)
            await refused(companion, params, "expired")
            async with SignerClient(tier1.stack.socket, tier1.stack.client_token("late")) as client:
                assert (await client.status()).frozen is False
            await assert_nothing_signed(tier1, companion, request["request_id"], ["expired"], nonce)

        run(tier1, body)


def test_a_bridge_that_rewrites_requests_in_flight_cannot_get_anything_signed(tier1, anvil, monkeypatch):
    """A compromised bridge rewrites the recipient and dresses it up as the friend. The companion
    checks the signer's signature on every request: the rewritten one is never shown and the main
    key signs nothing, so there is no transaction the bridge could broadcast by itself. Handed to
    the companion anyway, it is refused before any key is touched; the signer refuses it too."""
    queue = bridge_of(tier1).queue
    honest = queue.put

    def rewriting(items):
        for item in items:
            req = item["request"]
            req["tx"] = {**req["tx"], "to": STRANGER}  # the attacker's address...
            for action in req["actions"]:
                if action["type"] == "transfer":
                    action["recipient"] = {**action["recipient"], "address": STRANGER}
            req["summary"] = "send 0.02 ETH to dev-friend"  # ...dressed up as the friend
        return honest(items)

    monkeypatch.setattr(queue, "put", rewriting)
    signed: list = []

    async def body(companion: Companion):
        real_sign = companion.wallet.sign_transaction  # watched: the main key must never be used here
        companion.wallet.sign_transaction = lambda tx, passphrase: (
            signed.append(tx) or real_sign(tx, passphrase)
        )
        warnings: list[str] = []
        companion.warn = warnings.append
        before = balance(anvil, STRANGER)
        nonce = main_nonce(tier1, companion)
        [pending] = await tier1.submit(transfer(FRIEND, OVER_LIMIT))
        with pytest.raises(asyncio.TimeoutError):  # the forged request never reaches the user
            await request_for(companion, pending["request_id"], timeout=3)
        assert pending["request_id"] in companion.forged
        assert any("not signed by your signer" in w and pending["request_id"] in w for w in warnings)
        rewritten = json.loads(
            queue._conn.execute(
                "SELECT request FROM queue WHERE request_id=?", (pending["request_id"],)
            ).fetchone()[0]
        )
        assert rewritten["tx"]["to"] == STRANGER
        with pytest.raises(CompanionError, match="not signed by your signer"):
            companion.build_answer(rewritten, Choice("approve", bytearray(MAIN_PASS)))
        assert signed == []  # the main key never signed anything
        params = companion.build_answer(rewritten, Choice("deny")) | {  # a rogue companion's answer
            "action": "approve",
            "raw_tx": "0x" + real_sign(rewritten["tx"], bytearray(MAIN_PASS)).hex(),
        }
        await refused(companion, params, "different request")
        await assert_nothing_signed(tier1, companion, pending["request_id"], ["different request"], nonce)
        assert balance(anvil, STRANGER) == before

    run(tier1, body)


def test_the_bot_cannot_call_bridge_methods_and_the_bridge_cannot_sign(tier1):
    async def scenario():
        bot = tier1.stack.client_token("bot")
        bridge = tier1.stack.client_token("bridge9", Scope.BRIDGE)
        async with SignerClient(tier1.stack.socket, bot) as client:
            for method in ("approvals.wait", "approvals.state", "companion.devices"):
                with pytest.raises(SignerError) as err:
                    await client.call(method, {} if method != "approvals.wait" else {"timeout": 0})
                assert "bridge" in err.value.message
        async with SignerClient(tier1.stack.socket, bridge) as client:
            for method, params in (
                (
                    "sign.request",
                    {"idempotency_key": "k" * 10, "intent": {"chain_id": 31337, "to": FRIEND, "value": "1"}},
                ),
                ("status", None),
                ("companion.pair_begin", {}),
                ("companion.revoke", {"device_id": "dev_" + "0" * 16}),
            ):
                with pytest.raises(SignerError) as err:
                    await client.call(method, params)
                assert err.value.code == -32002

    asyncio.run(scenario())


def _tx_hash(raw_hex: str) -> str:
    from policies.kernel.keccak import keccak256

    return "0x" + keccak256(bytes.fromhex(raw_hex[2:])).hex()


def test_non_finite_timestamps_are_refused(tier1):
    """NaN compares false with everything: it would pass any freshness check if it got that far."""
    from signer.wire.messages import FREEZE_DOMAIN, freeze_body

    async def body(companion: Companion):
        nan = float("nan")
        message = signed_message(FREEZE_DOMAIN, freeze_body(companion.wallet.device_id, "freeze", "", nan))
        # NaN is not JSON: the signer's parser refuses the frame (-32700) before the model's finite check
        with pytest.raises(CompanionError, match="not valid JSON|finite"):
            await companion.call(
                "approvals.freeze",
                {
                    "device_id": companion.wallet.device_id,
                    "action": "freeze",
                    "freeze_id": "",
                    "ts": nan,
                    "signature": companion.wallet.device_sign(message),
                },
            )
        assert (await tier1.stack.call(tier1.admin, "status"))["frozen"] is False

    run(tier1, body)


def test_a_nonce_quote_counts_only_if_the_signer_signed_it_fresh_and_not_below_the_request(tier1):
    """The bridge relays the nonce quote too. A made-up higher nonce would get the main key to sign
    a transaction the bridge could hold and send later, so only the signer's fresh quote counts."""
    from companion_bridge.companion.client import quoted_nonce

    async def body(companion: Companion):
        request = await escalate(tier1, companion)
        key = companion.wallet.state["signer_key"]
        state = await companion.call("approvals.state")
        n = request["tx"]["nonce"]
        assert quoted_nonce(state, request, key) == n
        forged = {**state, "main_nonce": {"31337": n + 5}}
        assert quoted_nonce(forged, request, key) is None  # the signature no longer covers it
        assert quoted_nonce(state, request, key, now=state["ts"] + 600) is None  # a replayed old quote
        assert quoted_nonce(state, {**request, "tx": {**request["tx"], "nonce": n + 1}}, key) is None
        assert quoted_nonce(state, request, None) is None
        assert quoted_nonce({**state, "nonce_sig": "00" * 64}, request, key) is None

    run(tier1, body)


class _SlowNonceNode(ThreadingHTTPServer):
    """Forwards JSON-RPC to anvil; once `slow` is set, nonce reads take `slow` seconds."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _SlowNonceHandler)
        self.upstream, self.slow = upstream, 0.0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _SlowNonceHandler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if b"eth_getTransactionCount" in body:
            time.sleep(self.server.slow)  # type: ignore[attr-defined]
        request = urllib.request.Request(
            self.server.upstream,
            data=body,  # type: ignore[attr-defined]
            headers={"Content-Type": "application/json"},
        )
        reply = urllib.request.urlopen(request, timeout=30).read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def test_a_request_that_expires_while_its_answer_waits_is_refused_at_the_commit(make_stack, tmp_path, anvil):
    """The answer arrives in time and passes the first expiry check, then waits for the chain (the
    main account's nonce) past the expiry: the commit that would close the request checks again."""
    node = _SlowNonceNode(anvil.url)
    with own_tier1(make_stack, tmp_path, anvil, rpc_url=node.url, signer={"pending_ttl_seconds": 3}) as tier1:

        async def body(companion: Companion):
            nonce = main_nonce(tier1, companion)
            request = await escalate(tier1, companion)
            params = companion.build_answer(request, Choice("approve", bytearray(MAIN_PASS)))
            node.slow = request["expires_at"] - time.time() + 1.0  # the nonce read ends after the expiry
            assert time.time() < request["expires_at"] - 1.0  # so the answer itself is on time
            await refused(companion, params, "expired")
            node.slow = 0.0
            await assert_nothing_signed(tier1, companion, request["request_id"], ["expired"], nonce)
            with sqlite3.connect(tier1.stack.paths.db) as conn:
                (state,) = conn.execute(
                    "SELECT state FROM approvals WHERE request_id=?", (request["request_id"],)
                ).fetchone()
            assert state == "open"  # never approved; it reads as expired from now on

        run(tier1, body)
    node.shutdown()
