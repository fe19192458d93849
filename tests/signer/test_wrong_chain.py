"""The signer refuses to sign when its RPC node answers for another chain (`eth_chainId`): the real
signer daemon in front of a node that lies on demand (tests/signer/lying_node.py, relaying to a real
anvil started here). Asked before the first signature on each connection to the node, so a node
swapped behind the same URL is caught too; nothing is signed or sent, and the refusal says what to fix."""

from __future__ import annotations

import pytest

from bot.devchain import DevChain, free_port, rpc
from signer.wire.exchange import new_idempotency_key
from tests.conftest import FRIEND, balance
from tests.signer.lying_node import LyingNode

pytestmark = pytest.mark.chain
STEP = 10**15


@pytest.fixture(scope="module")
def chain():
    node = DevChain(port=free_port()).start()
    yield node
    node.stop()


@pytest.fixture()
def node(chain):
    lying = LyingNode(chain.url)
    yield lying
    lying.shutdown()
    lying.server_close()


def send(stack, token: str) -> dict:
    return stack.call_sync(
        token,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": 31337, "to": FRIEND, "value": str(STEP)},
        },
    )


def refused_for_wrong_chain(stack, chain, node, token: str, key: str, told: int) -> None:
    nonce = rpc(chain.url, "eth_getTransactionCount", [key, "pending"])
    sent_before, friend_before = list(node.sent), balance(chain, FRIEND)
    result = send(stack, token)
    assert (result["status"], result["rule_id"]) == ("denied", "chain.wrong_id"), result
    assert f"answers for chain {told}" in result["reason"] and "nothing was signed" in result["reason"]
    assert (
        "config.yaml" in result["reason"] and node.url not in result["reason"]
    )  # a URL may carry an API key
    assert node.sent == sent_before and rpc(chain.url, "eth_getTransactionCount", [key, "pending"]) == nonce
    assert balance(chain, FRIEND) == friend_before
    abandoned = stack.call_sync(stack.admin_token, "audit.tail", {"n": 1, "kind": "sign.abandoned"})[
        "entries"
    ][0]
    assert abandoned["body"]["request_id"] == result["request_id"]
    assert abandoned["body"]["rule_id"] == "chain.wrong_id"


def test_a_node_of_another_chain_gets_nothing_signed(make_stack, chain, node):
    stack = make_stack(rpc_url=node.url).start()
    key = stack.funded_session_key()["address"]
    token = stack.client_token("bot")
    node.chain_id_lie = 1  # a mainnet node behind the dev chain's URL
    refused_for_wrong_chain(stack, chain, node, token, key, 1)
    refused_for_wrong_chain(
        stack, chain, node, token, key, 1
    )  # asked again: the refusal did not stick a verdict
    node.chain_id_lie = None  # the right node again: the held room was released, signing resumes
    before = balance(chain, FRIEND)
    result = send(stack, token)
    assert result["status"] == "signed", result
    rpc(chain.url, "anvil_mine", [1])
    assert balance(chain, FRIEND) - before == STEP


def test_a_node_swapped_behind_the_same_url_is_asked_again_on_the_new_connection(make_stack, chain, node):
    stack = make_stack(rpc_url=node.url).start()
    key = stack.funded_session_key()["address"]
    token = stack.client_token("bot")
    assert send(stack, token)["status"] == "signed"
    asked = node.chain_id_asked
    assert asked >= 1
    assert send(stack, token)["status"] == "signed"
    assert node.chain_id_asked == asked  # one unbroken connection: not asked for every signature
    node.restart_as(10)  # the node restarts as another chain's: the open connection is gone
    refused_for_wrong_chain(stack, chain, node, token, key, 10)
    node.chain_id_lie = None
    assert send(stack, token)["status"] == "signed"
    node.drop_connections = False
    assert send(stack, token)["status"] == "signed"


def test_the_check_endpoint_must_serve_the_same_chain(make_stack, chain, node):
    stack = make_stack(rpc_url=chain.url)
    import yaml

    config = yaml.safe_load((stack.home / "config.yaml").read_text())
    config["chains"][0]["check_rpc_url"] = node.url
    (stack.home / "config.yaml").write_text(yaml.safe_dump(config))
    stack.start()
    key = stack.funded_session_key()["address"]
    token = stack.client_token("bot")
    node.chain_id_lie = 5
    nonce = rpc(chain.url, "eth_getTransactionCount", [key, "pending"])
    result = send(stack, token)
    assert (result["status"], result["rule_id"]) == ("denied", "chain.wrong_id"), result
    assert "check endpoint" in result["reason"] and "answers for chain 5" in result["reason"]
    assert rpc(chain.url, "eth_getTransactionCount", [key, "pending"]) == nonce
