"""Attacks by the signer's own RPC node: the real signer daemon in front of a node that lies on demand
(tests/signer/lying_node.py, relaying to a real anvil started here).

The property under attack: a signed transaction's spend is released only when the signer proves it
can never be mined (another of its own transactions is mined at that nonce, by a receipt checked
against the hash the signer computed). So whatever the node says, the value that can leave the
session key within a window is at most the policy's limit, checked on anvil's balances.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import yaml

from bot.devchain import DevChain, free_port, rpc
from policies.intent import NATIVE
from signer.wire.exchange import new_idempotency_key
from tests.conftest import FRIEND, STRANGER, balance
from tests.signer.lying_node import LyingNode

pytestmark = pytest.mark.chain
STEP = 10**16  # the dev policy's per-transaction limit
LIMIT = 5 * STEP  # the dev policy's 24 h window for ETH on the dev chain
HELD = f"31337:{NATIVE}"


@pytest.fixture(scope="module")
def chain():
    node = DevChain(port=free_port()).start()
    yield node
    node.stop()


@pytest.fixture()
def lying(make_stack, chain):
    """(node, stack, bot token, session key address), the node honest until a test says otherwise."""
    nodes: list[LyingNode] = []

    def make(check: bool = False, **chain_settings):
        node = LyingNode(chain.url)
        nodes.append(node)
        stack = make_stack(rpc_url=node.url)
        if check:  # a second endpoint the signer must find the same receipt on: here, anvil itself
            chain_settings["check_rpc_url"] = chain.url
        config = yaml.safe_load((stack.home / "config.yaml").read_text())
        config["chains"][0].update(chain_settings)
        (stack.home / "config.yaml").write_text(yaml.safe_dump(config))
        stack.start()
        key = stack.funded_session_key()
        return node, stack, stack.client_token("bot"), key["address"]

    yield make
    for node in nodes:
        node.shutdown()
        node.server_close()


def send(stack, token: str, value: int = STEP) -> dict:
    return stack.call_sync(
        token,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(value)},
        },
    )


def state(stack, token: str, request_id: str) -> str:
    return stack.call_sync(token, "sign.status", {"request_id": request_id})["state"]


def eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def in_flight(stack) -> dict:
    return stack.call_sync(stack.admin_token, "status")["in_flight"]


def audit(stack, kind: str) -> list[dict]:
    return [
        e["body"]
        for e in stack.call_sync(stack.admin_token, "audit.tail", {"n": 200, "kind": kind})["entries"]
    ]


def test_eight_refused_then_hidden_transfers_move_at_most_the_limit(lying, chain):
    """The reported attack: "transaction underpriced", relayed anyway, then null for the hash."""
    node, stack, bot, _ = lying()
    node.refuse_then_hide = True
    before = balance(chain, FRIEND)
    replies = [send(stack, bot) for _ in range(8)]
    assert [r["status"] for r in replies] == ["signed"] * 5 + ["pending_approval"] * 3
    assert all("transaction underpriced" in r["broadcast_unknown"] for r in replies[:5])
    assert all(r["rule_id"] == "limit.window.24h" for r in replies[5:])
    assert balance(chain, FRIEND) - before == LIMIT  # the node relayed all five: never more than the limit
    node.wait_asked_again(r["tx_hash"] for r in replies[:5])  # the watcher asked again, told null each time
    assert {state(stack, bot, r["request_id"]) for r in replies[:5]} == {"unconfirmed"}
    held = in_flight(stack)
    assert held["count"] == held["unconfirmed"] == 5 and held["held"] == {HELD: str(LIMIT)}
    assert not audit(stack, "tx.dropped")

    stack.stop()  # a restart neither forgets the held spends nor stops following them
    stack.start()
    assert send(stack, bot)["status"] == "pending_approval"
    node.honest()
    eventually(lambda: {state(stack, bot, r["request_id"]) for r in replies[:5]} == {"confirmed"})
    assert in_flight(stack)["count"] == 0
    assert send(stack, bot)["status"] == "pending_approval"  # mined: still counted in the window
    assert balance(chain, FRIEND) - before == LIMIT


def test_a_nonce_reused_on_a_lying_count_holds_every_copy_until_one_is_mined(lying, chain):
    """The node freezes the account's nonce: the signer signs five different transfers at one nonce.
    All five count until the chain shows which one took it; then the other four are released."""
    node, stack, bot, address = lying()
    frozen = int(rpc(chain.url, "eth_getTransactionCount", [address, "pending"]), 16)
    node.nonce_lie = lambda _: frozen
    node.refuse_then_hide = True
    before = balance(chain, FRIEND)
    replies = [send(stack, bot, STEP - i) for i in range(6)]
    assert [r["status"] for r in replies] == ["signed"] * 5 + ["pending_approval"]
    assert {r["nonce"] for r in replies[:5]} == {frozen} and len({r["tx_hash"] for r in replies[:5]}) == 5
    assert balance(chain, FRIEND) - before == STEP  # only the first could take the nonce

    node.honest()
    eventually(lambda: state(stack, bot, replies[0]["request_id"]) == "confirmed")
    eventually(lambda: {state(stack, bot, r["request_id"]) for r in replies[1:5]} == {"dropped"})
    proofs = {p["tx_hash"]: p for p in audit(stack, "tx.dropped")}
    assert set(proofs) == {r["tx_hash"] for r in replies[1:5]}
    assert {p["taken_by_tx_hash"] for p in proofs.values()} == {replies[0]["tx_hash"]}
    assert in_flight(stack)["count"] == 0
    # only the mined one still counts: four more fit, the fifth does not
    assert [send(stack, bot)["status"] for _ in range(5)] == ["signed"] * 4 + ["pending_approval"]
    assert balance(chain, FRIEND) - before == LIMIT


def test_held_and_reordered_transactions_move_at_most_the_limit(lying, chain):
    """The node refuses and keeps every transaction, then hands them to the chain newest first."""
    node, stack, bot, _ = lying()
    node.hold = True
    before = balance(chain, FRIEND)
    replies = [send(stack, bot, STEP - i) for i in range(6)]
    assert [r["status"] for r in replies] == ["signed"] * 5 + ["pending_approval"]
    node.release_held(reverse=True)
    moved = balance(chain, FRIEND) - before
    assert 0 < moved <= LIMIT
    node.wait_asked_again(r["tx_hash"] for r in replies[:5])  # mined, and still hidden when asked
    assert {state(stack, bot, r["request_id"]) for r in replies[:5]} == {
        "unconfirmed"
    }  # all hidden: all held

    node.honest()
    eventually(lambda: in_flight(stack)["count"] == 0)
    states = {r["tx_hash"]: state(stack, bot, r["request_id"]) for r in replies[:5]}
    mined = {h for h, s in states.items() if s == "confirmed"}
    assert set(states.values()) <= {"confirmed", "dropped"} and mined
    counted = sum(STEP - i for i, r in enumerate(replies[:5]) if r["tx_hash"] in mined)
    assert counted == moved  # what stays counted is exactly what moved


def _fake_receipt(asked: str, sender: str, status: str) -> dict:
    return {
        "transactionHash": asked,
        "from": sender,
        "status": status,
        "blockNumber": "0x1",
        "blockHash": "0x" + "ab" * 32,
        "gasUsed": "0x5208",
        "logs": [],
    }


def test_receipts_for_another_transaction_or_sender_are_rejected(lying, chain):
    node, stack, bot, address = lying()
    first = send(stack, bot)
    eventually(lambda: state(stack, bot, first["request_id"]) == "confirmed")
    other = rpc(chain.url, "eth_getTransactionReceipt", [first["tx_hash"]])
    node.receipt_lie = lambda asked, truth: other  # a real receipt, of another of the key's transactions
    second = send(stack, bot)

    def rejected() -> list[str]:
        return [r["error"] for r in audit(stack, "tx.receipt_rejected") if r["tx_hash"] == second["tx_hash"]]

    eventually(lambda: any("another transaction" in e for e in rejected()))
    assert state(stack, bot, second["request_id"]) == "signed"
    node.receipt_lie = lambda asked, truth: truth and {**truth, "from": STRANGER.lower()}
    eventually(lambda: any("another sender" in e for e in rejected()))
    assert state(stack, bot, second["request_id"]) == "signed"
    node.honest()
    eventually(lambda: state(stack, bot, second["request_id"]) == "confirmed")


@pytest.mark.parametrize("status", ["0x1", "0x0"])
def test_a_fake_receipt_for_a_hidden_transaction_never_releases_its_spend(lying, chain, status):
    """Fake success or fake failure for transactions the node relayed and hid: they stay counted."""
    node, stack, bot, address = lying()
    node.refuse_then_hide = True
    node.receipt_lie = lambda asked, truth: _fake_receipt(asked, address, status)
    before = balance(chain, FRIEND)
    replies = [send(stack, bot) for _ in range(6)]
    assert [r["status"] for r in replies] == ["signed"] * 5 + ["pending_approval"]
    want = "confirmed" if status == "0x1" else "reverted"
    eventually(lambda: {state(stack, bot, r["request_id"]) for r in replies[:5]} == {want})
    assert not audit(stack, "tx.dropped")
    assert send(stack, bot)["status"] == "pending_approval"  # "reverted" frees nothing either
    assert balance(chain, FRIEND) - before == LIMIT


def test_a_forged_receipt_for_the_nonce_taker_is_caught_by_the_check_endpoint(lying, chain):
    """The one proof a single node could forge: a receipt for another of the signer's transactions at the
    nonce. With a second endpoint configured, both must show it; here the check endpoint does not."""
    node, stack, bot, address = lying(check=True)
    frozen = int(rpc(chain.url, "eth_getTransactionCount", [address, "pending"]), 16)
    node.nonce_lie = lambda _: frozen
    node.refuse_then_hide = True
    relayed = send(stack, bot)  # mined on anvil, hidden by the node
    decoy = send(stack, bot, STEP - 1)  # same nonce: can never be mined
    assert decoy["nonce"] == relayed["nonce"] == frozen
    node.receipt_lie = lambda asked, truth: (
        _fake_receipt(asked, address, "0x1") if asked == decoy["tx_hash"] else None
    )
    node.wait_asked_again([relayed["tx_hash"], decoy["tx_hash"]])  # the forged receipt was told
    assert state(stack, bot, relayed["request_id"]) == "unconfirmed"  # not released on the forged proof
    assert state(stack, bot, decoy["request_id"]) == "unconfirmed"
    assert not audit(stack, "tx.dropped")
    # and a receipt the two endpoints disagree about is rejected, not recorded
    node.honest()
    node.receipt_lie = lambda asked, truth: truth and {**truth, "status": "0x0"}
    eventually(lambda: any("disagree" in r["error"] for r in audit(stack, "tx.receipt_rejected")))
    assert state(stack, bot, relayed["request_id"]) == "unconfirmed"
    node.honest()
    eventually(lambda: state(stack, bot, relayed["request_id"]) == "confirmed")
    eventually(lambda: state(stack, bot, decoy["request_id"]) == "dropped")


def test_a_nonce_taken_in_a_shallow_block_releases_nothing_until_it_is_buried(lying, chain):
    """A reorg could undo the proof: the taker's block must be `release_confirmations` deep."""
    node, stack, bot, address = lying(release_confirmations=3)
    node.hold = True  # refused and never relayed: the next transfer takes its nonce
    refused = send(stack, bot)
    node.honest()
    taker = send(stack, bot, STEP - 1)
    assert taker["nonce"] == refused["nonce"]
    eventually(lambda: state(stack, bot, taker["request_id"]) == "confirmed")
    node.wait_asked_again([refused["tx_hash"]])  # looked at again after the taker was mined
    assert state(stack, bot, refused["request_id"]) == "unconfirmed"  # one confirmation only
    rpc(chain.url, "anvil_mine", ["0x2"])
    eventually(lambda: state(stack, bot, refused["request_id"]) == "dropped")


def test_a_transaction_held_back_past_the_window_counts_until_mined_and_then_from_then(chain, tmp_path):
    """The node keeps five transactions for over a day, then has the first mined: the window must not
    show room meanwhile, nor right after (it counts the late one from when its receipt was seen)."""
    from tests.signer.test_clock_skew import HOUR, SkewedStack

    node = LyingNode(chain.url)
    stack = SkewedStack(tmp_path, node.url)
    config = yaml.safe_load((stack.home / "config.yaml").read_text())
    config["signer"]["broadcast"] = True
    (stack.home / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        stack.start()
        stack.funded_session_key()
        bot = stack.client_token("bot")
        node.hold = True
        before = balance(chain, FRIEND)
        replies = [send(stack, bot, STEP - i) for i in range(5)]
        assert [r["status"] for r in replies] == ["signed"] * 5
        stack.stop()
        stack.skew(25 * HOUR)  # a day later, by the signer's clock
        stack.reboot()
        stack.start()
        assert send(stack, bot)["status"] == "pending_approval"  # held past the window: still counted
        assert in_flight(stack)["count"] == 5
        node.release_held(reverse=False)  # now the first is mined, a day late (and still hidden)
        assert balance(chain, FRIEND) - before == STEP
        node.honest()
        eventually(lambda: in_flight(stack)["count"] == 0)
        assert state(stack, bot, replies[0]["request_id"]) == "confirmed"
        assert {state(stack, bot, r["request_id"]) for r in replies[1:]} == {"dropped"}
        # the late one counts from now: four more fit in today's window, not five
        assert [send(stack, bot)["status"] for _ in range(5)] == ["signed"] * 4 + ["pending_approval"]
        assert balance(chain, FRIEND) - before == LIMIT
    finally:
        stack.close()
        node.shutdown()
        node.server_close()


def test_security_audit_names_the_spends_held_by_unconfirmed_transactions(lying, chain):
    from tests.ops.test_audit import audit as security_audit, findings, status

    node, stack, bot, _ = lying()
    assert status(security_audit(stack.home), "OWL-TX-001") == "pass"
    node.hold = True
    held = send(stack, bot)
    assert held["status"] == "signed" and held["broadcast_unknown"]
    [finding] = findings(security_audit(stack.home), "OWL-TX-001")
    assert finding.severity == "warning" and f"{STEP} on {HELD}" in finding.message
    node.honest()
    send(stack, bot, STEP - 1)  # takes the refused one's nonce: once mined, the held one is proven dropped
    eventually(lambda: state(stack, bot, held["request_id"]) == "dropped")
    assert status(security_audit(stack.home), "OWL-TX-001") == "pass"


def test_a_nonce_above_any_the_signer_signed_is_refused(lying, chain):
    """A node over-reporting the count would park transactions behind a gap (held, mined when it likes):
    a session key signs nowhere else, so a count past its highest signed nonce is a lie."""
    node, stack, bot, address = lying()
    first = send(stack, bot)
    assert first["status"] == "signed"
    node.refuse_then_hide = True  # a refusal makes the signer ask the node for the count again
    hidden = send(stack, bot)
    assert hidden["nonce"] == first["nonce"] + 1 and hidden["broadcast_unknown"]
    node.honest()
    node.nonce_lie = lambda n: n + 3
    before = balance(chain, FRIEND)
    lied = send(stack, bot)
    assert lied["status"] == "failed" and "lying" in lied["error"] and "tx_hash" not in lied
    assert balance(chain, FRIEND) == before
    node.nonce_lie = None
    after = send(stack, bot)
    assert (
        after["status"] == "signed"
        and after["nonce"] == hidden["nonce"] + 1
        and "broadcast_unknown" not in after
    )
