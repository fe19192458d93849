"""`approvals.home` (signer/tier1/home.py) against a real signer: the spending it reports is the ledger's own
sum, limits come from the policy, and a node that cannot be read leaves its lines saying so (never a
false zero) while the rest is still answered."""

from __future__ import annotations

import socket

from signer.wire.protocol import Scope
from tests.companion.conftest import transfer
from tests.conftest import FRIEND, as_json


def test_a_node_that_cannot_be_read_is_named_not_shown_as_zero(make_stack):
    with socket.socket() as held:  # a port this test owns, on which nothing answers
        held.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{held.getsockname()[1]}"
        stack = make_stack(dead).start()
        key = stack.call_sync(
            stack.admin_token,
            "session_key.create",
            {"idempotency_key": "home-dead-node-0001", "chain_id": 31337},
        )["session_key"]
        home = stack.call_sync(stack.client_token("bridge-home", Scope.BRIDGE), "approvals.home")
    [line] = [b for b in home["balances"] if b["holder"] == "session_key"]
    assert line["key_id"] == key["key_id"] and line["asset"] is None
    assert line["error"].startswith("could not read it from the node"), line
    assert line["cap"]["symbol"] == "ETH" and line["cap"]["amount"]  # the cap is the signer's own: shown
    windows = {s["window"]: s for s in home["spent"]}
    assert windows["24h"]["spent"]["amount"] == "0 ETH" and windows["24h"]["limit"]["amount"] == "0.05 ETH"
    assert windows["7d"]["limit"]["amount"] == "0.2 ETH"
    assert home["main_account"] is None and home["tier3"] == []


def test_the_spending_is_the_ledgers_sum_in_every_window(make_stack, anvil):
    import asyncio

    from signer.wire.client import SignerClient

    stack = make_stack().start()
    stack.funded_session_key()
    bot = stack.client_token("bot-home")

    async def spend(value: int) -> dict:
        async with SignerClient(stack.socket, bot) as client:
            return as_json(await client.sign(transfer(FRIEND, value)))

    sent = [asyncio.run(spend(v)) for v in (10**15, 2 * 10**15)]
    assert [s["status"] for s in sent] == ["signed", "signed"], sent
    home = stack.call_sync(stack.client_token("bridge-home2", Scope.BRIDGE), "approvals.home")
    for window in home["spent"]:
        assert window["spent"]["amount_base_units"] == str(3 * 10**15), window
        assert window["spent"]["amount"] == "0.003 ETH"
