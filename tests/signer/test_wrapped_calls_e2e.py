"""Through the real signer daemon on anvil: what hides inside a wrapper is judged, not the wrapper.

The router is allow-listed for the ERC-7579 `execute` and Multicall3 `aggregate3` selectors, the
setup in which an unlimited approve inside `execute` was once signed as `contract.allowed`.
"""

from __future__ import annotations

import pytest

from signer.wire.exchange import new_idempotency_key
from tests.conftest import DEV_POLICY, FRIEND, rpc
from tests.policies.wrappers import WRAPPERS, call_data

pytestmark = [pytest.mark.chain, pytest.mark.slow]
ROUTER = "0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad"
TOKEN = "0x" + "aa" * 20
SPENDER = "0x000000000022d473030f116ddee9f6b43ac78ba3"
CENT = 10**16  # the dev policy's per-transaction limit


def test_hidden_approvals_transfers_and_undecoded_calls_are_not_signed(make_stack, anvil, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        DEV_POLICY.read_text().replace(
            "contracts: []",
            f'contracts:\n  - {{chain: 31337, address: "{ROUTER}", name: router, selectors: ["0xe9ae5c53", "0x82ad56cb"]}}',
        )
    )
    stack = make_stack(policy=policy).start()
    key = stack.funded_session_key()
    token = stack.client_token("bot")
    nonce = rpc(anvil.url, "eth_getTransactionCount", [key["address"], "latest"])

    def sign(data: bytes) -> dict:
        return stack.call_sync(
            token,
            "sign.request",
            {
                "idempotency_key": new_idempotency_key(),
                "intent": {"chain_id": 31337, "to": ROUTER, "value": "0", "data": "0x" + data.hex()},
            },
        )

    unlimited = call_data("approve(address,uint256)", ["address", "uint256"], SPENDER, 2**256 - 1)
    for wrapper in ("erc7579.execute.single", "erc7579.execute.batch", "multicall3.aggregate3"):
        result = sign(WRAPPERS[wrapper]([(TOKEN, 0, unlimited)]))
        assert result["status"] == "denied" and result["rule_id"] == "approval.unlimited", (wrapper, result)

    over = sign(WRAPPERS["erc7579.execute.batch"]([(FRIEND, CENT, b""), (FRIEND, 1, b"")]))
    assert over["status"] != "signed" and over["rule_id"] == "limit.per_tx", over

    for data in (
        bytes.fromhex("3593564c") + bytes(32),  # undecoded, though the router is allow-listed
        WRAPPERS["multicall3.aggregate3"]([(ROUTER, 0, bytes.fromhex("3593564c"))]),
    ):
        result = sign(data)
        assert result["status"] == "denied" and result["rule_id"] == "decode.opaque", result

    trailing = sign(WRAPPERS["erc7579.execute.single"]([(FRIEND, 1, b"")]) + b"\x00")
    assert trailing["status"] == "denied" and trailing["rule_id"] == "decode.malformed", trailing

    assert rpc(anvil.url, "eth_getTransactionCount", [key["address"], "latest"]) == nonce
    stack.stop()
    verified = stack.owlia("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
