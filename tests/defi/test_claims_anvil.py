"""Claims from a real merkle distributor (`@uniswap/merkle-distributor` bytecode) on anvil: from chat,
the claim with the proof from a file in the workspace pays the session key; a claim that names another
account (with that account's own valid proof) is denied before broadcast."""

from __future__ import annotations

import json

import pytest
from eth_abi import encode

from bot.devchain import PROJECT_ROOT, rpc
from bot.devmarket import creation_code, deploy, deploy_token, selector, send
from policies.kernel.files import ensure_private_dir, write_private_file
from policies.kernel.keccak import keccak256
from tests.bot.agent.conftest import attach_bot, call
from tests.conftest import FRIEND, STRANGER, wait_receipt
from tests.defi.conftest import nonce, swap_policy, token_balance
from tests.defi.merkle import claims_file
from tests.defi.test_swaps_anvil import findings, sign
from tests.fakes.llm_server import FakeLLMServer, Reply

pytestmark = [pytest.mark.chain, pytest.mark.slow]
DISTRIBUTOR = (
    PROJECT_ROOT / "node_modules" / "@uniswap" / "merkle-distributor" / "build" / "MerkleDistributor.json"
)


def create_address(sender: str, nonce: int) -> str:
    """Where `sender`'s CREATE at `nonce` deploys: keccak256(rlp([sender, nonce]))[12:] (nonce < 128)."""
    item = bytes([nonce]) if 0 < nonce < 0x80 else b"\x80"
    body = b"\x94" + bytes.fromhex(sender[2:]) + item
    return "0x" + keccak256(bytes([0xC0 + len(body)]) + body)[12:].hex()


def airdrop(url: str, sender: str, entries: list[tuple[str, int]]) -> tuple[str, str, dict]:
    """A token, a distributor for `entries` holding the whole drop, and its claims file."""
    token = deploy_token(url, sender)
    tree = claims_file(entries)
    distributor = deploy(
        url,
        sender,
        creation_code(DISTRIBUTOR)
        + encode(["address", "bytes32"], [token, bytes.fromhex(tree["merkleRoot"][2:])]),
        "MerkleDistributor",
    )
    send(
        url,
        sender,
        token,
        selector("transfer(address,uint256)")
        + encode(["address", "uint256"], [distributor, sum(a for _, a in entries)]),
        what="funding the distributor",
    )
    return token, distributor, tree


def claim_data(tree: dict, account: str) -> bytes:
    entry = tree["claims"][account]
    return selector("claim(uint256,address,uint256,bytes32[])") + encode(
        ["uint256", "address", "uint256", "bytes32[]"],
        [entry["index"], account, int(entry["amount"], 16), [bytes.fromhex(p[2:]) for p in entry["proof"]]],
    )


def test_a_claim_from_chat_pays_the_session_key_and_one_for_another_account_is_denied(
    make_stack, chain, market, tmp_path
):
    # The policy lists the distributor before it exists (the drop names the session key, made after
    # the signer starts): its address is where anvil account 5 deploys after the token.
    deployer = rpc(chain.url, "eth_accounts")[5].lower()
    first = nonce(chain.url, deployer)
    predicted_token, predicted = create_address(deployer, first), create_address(deployer, first + 1)
    policy = swap_policy(market, tmp_path)
    policy.write_text(
        policy.read_text() + f'\nclaims:\n  distributors:\n    - {{chain: 31337, address: "{predicted}", '
        f'token: "{predicted_token}", name: test-airdrop}}\n'
    )
    stack = make_stack(chain.url, policy=policy).start()
    payer = stack.funded_session_key()["address"].lower()
    stranger, friend = STRANGER.lower(), FRIEND.lower()
    token, distributor, tree = airdrop(
        chain.url, deployer, [(payer, 7 * 10**18), (stranger, 5 * 10**18), (friend, 10**18)]
    )
    assert (token, distributor) == (predicted_token, predicted)
    token_id = stack.client_token("probe")

    sent = nonce(chain.url, payer)
    denied = sign(
        stack,
        token_id,
        {"chain_id": 31337, "to": distributor, "value": "0", "data": "0x" + claim_data(tree, stranger).hex()},
    )
    assert denied["status"] == "denied" and "claim.recipient" in findings(denied), denied
    assert nonce(chain.url, payer) == sent and token_balance(chain.url, token, stranger) == 0

    workspace = ensure_private_dir(stack.home / "workspace")
    write_private_file(workspace / "airdrop.json", json.dumps(tree).encode())
    with FakeLLMServer() as server:
        bot = attach_bot(stack, server)
        server.enqueue(
            Reply(tool_calls=[call("claim", {"distributor": "test-airdrop", "proof": "airdrop.json"})]),
            Reply(text=["Claimed."]),
        )
        out = bot.chat("claim my airdrop from test-airdrop, the proof is in airdrop.json")
    assert "Signed and sent" in out and "claim " in out, out
    details = bot.chat("/details")  # the chat shows the hash short; /details has it whole
    tx_hash = next(
        w.strip(".,()")
        for w in details.replace("\n", " ").split()
        if w.strip(".,()").startswith("0x") and len(w.strip(".,()")) == 66
    )
    assert wait_receipt(chain, tx_hash)["status"] == "0x1"
    assert token_balance(chain.url, token, payer) == 7 * 10**18
