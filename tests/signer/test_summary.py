"""The signer's one-line summary hides only what it already shows in other words."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings, strategies as st

from policies.decode import APPROVE, TOKEN_SELECTORS, TRANSFER, decode, encode_erc20_transfer
from policies.intent import NATIVE, Approval, Call, ContractCall, Decoded, Forbidden, Transfer
from signer.summary import Summarizer
from tests.policies.test_evaluate import FRIEND, STRANGER, USDC, abi, approve, call, multicall, policy


def summary(data: bytes) -> str:
    return Summarizer(policy())(decode(call(to=USDC, data=data)))


def test_a_token_transfer_is_one_line_not_a_transfer_and_a_call():
    assert summary(encode_erc20_transfer(FRIEND, 10**6)).startswith("send 1 USDC to ")
    assert "selector" not in summary(encode_erc20_transfer(FRIEND, 10**6))


def test_a_value_moving_call_beside_a_small_transfer_is_shown():
    """transferAndCall(stranger, 10**12) next to a 1-unit transfer on the same token: not hidden."""
    hidden = abi(
        "transferAndCall(address,uint256,bytes)", ["address", "uint256", "bytes"], STRANGER, 10**12, b""
    )
    text = summary(multicall(encode_erc20_transfer(FRIEND, 1), hidden))
    assert "send 0.000001 USDC" in text and "selector 0x4000aea0 (not decoded)" in text


def test_each_token_call_explains_at_most_one_action():
    text = summary(multicall(encode_erc20_transfer(FRIEND, 1), approve(STRANGER, 5), approve(STRANGER, 7)))
    assert (
        text.count("approve: let") == 2
        and "selector 0x095ea7b3" not in text
        and "selector 0xa9059cbb" not in text
    )


# ---- the summary counts explained token calls lazily: same text as counting them up front ----

_TOKENS = [USDC, "0x" + "ee" * 20]
_action = st.one_of(
    st.builds(
        Transfer,
        st.just(31337),
        st.sampled_from([NATIVE, *_TOKENS]),
        st.sampled_from([FRIEND, STRANGER]),
        st.integers(0, 10**20),
    ),
    st.builds(
        Approval,
        st.just(31337),
        st.sampled_from(_TOKENS),
        st.sampled_from([FRIEND, STRANGER]),
        st.sampled_from([0, 5, 2**255, 2**256 - 1]),
        st.sampled_from(["approve", "permit"]),
    ),
    st.builds(
        ContractCall,
        st.just(31337),
        st.sampled_from([*_TOKENS, STRANGER]),
        st.sampled_from([TRANSFER, APPROVE, bytes.fromhex("4000aea0")]),
        st.integers(0, 2),
        st.just(0),
        st.booleans(),
    ),
    st.builds(Forbidden, st.just("decode.malformed"), st.just("bad bytes")),
)


def _counted_up_front(summarizer: Summarizer, decoded: Decoded) -> str:
    """The summary as written before the count became lazy (the reference)."""
    parts: list[str] = []
    explained = Counter(a.asset for a in decoded.actions if isinstance(a, (Transfer, Approval)))
    for action in decoded.actions:
        if isinstance(action, Transfer):
            parts.append(
                f"send {summarizer._amount(action.chain_id, action.asset, action.amount)} "
                f"to {summarizer._who(action.chain_id, action.recipient)}"
            )
        elif isinstance(action, Approval):
            amount = (
                "UNLIMITED"
                if action.amount >= 2**255
                else summarizer._amount(action.chain_id, action.asset, action.amount)
            )
            parts.append(
                f"{action.method}: let {summarizer._who(action.chain_id, action.spender)} spend {amount}"
            )
        elif isinstance(action, ContractCall):
            if action.selector in TOKEN_SELECTORS and explained[action.target] > 0:
                explained[action.target] -= 1
                continue
            parts.append(
                f"call {summarizer._who(action.chain_id, action.target)} "
                f"selector 0x{action.selector.hex()}" + ("" if action.decoded else " (not decoded)")
            )
        elif isinstance(action, Forbidden):
            parts.append(f"FORBIDDEN: {action.reason}")
    if not parts:
        parts.append("empty request")
    return "; ".join(parts) + f" on {summarizer._chain(decoded.call.chain_id)}"


@settings(max_examples=300, deadline=None)
@given(st.lists(_action, max_size=8))
def test_the_lazy_count_gives_the_text_the_up_front_count_gave(actions):
    summarizer = Summarizer(policy())
    decoded = Decoded(Call(31337, USDC, 0), tuple(actions))
    assert summarizer(decoded) == _counted_up_front(summarizer, decoded)
