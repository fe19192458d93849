"""The signer's one-line summary hides only what it already shows in other words."""

from __future__ import annotations

from policies.decode import decode, encode_erc20_transfer
from signer.summary import Summarizer
from tests.policies.test_evaluate import FRIEND, STRANGER, USDC, abi, approve, call, multicall, policy


def summary(data: bytes) -> str:
    return Summarizer(policy())(decode(call(to=USDC, data=data)))


def test_a_token_transfer_is_one_line_not_a_transfer_and_a_call():
    assert summary(encode_erc20_transfer(FRIEND, 10**6)).startswith("send 1 USDC to ")
    assert "selector" not in summary(encode_erc20_transfer(FRIEND, 10**6))


def test_a_value_moving_call_beside_a_small_transfer_is_shown():
    """transferAndCall(stranger, 10**12) next to a 1-unit transfer on the same token: not hidden."""
    hidden = abi("transferAndCall(address,uint256,bytes)", ["address", "uint256", "bytes"], STRANGER, 10**12, b"")
    text = summary(multicall(encode_erc20_transfer(FRIEND, 1), hidden))
    assert "send 0.000001 USDC" in text and "selector 0x4000aea0 (not decoded)" in text


def test_each_token_call_explains_at_most_one_action():
    text = summary(multicall(encode_erc20_transfer(FRIEND, 1), approve(STRANGER, 5), approve(STRANGER, 7)))
    assert text.count("approve: let") == 2 and "selector 0x095ea7b3" not in text and "selector 0xa9059cbb" not in text
