"""signer.simulate reads balance changes from eth_simulateV1 logs: every outflow counts, unnetted."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from policies.intent import NATIVE
from signer.simulate import DEPOSIT, NATIVE_LOG_ADDRESS, TRANSFER, WITHDRAWAL, changes_from_logs

ACCOUNTS = ["0x" + c * 40 for c in "abcd"]
TOKENS = [NATIVE_LOG_ADDRESS, "0x" + "77" * 20]


def topic(address: str) -> str:
    return "0x" + "00" * 12 + address[2:]


def transfer_log(token: str, src: str, dst: str, amount: int) -> dict:
    return {
        "address": token,
        "topics": [TRANSFER, topic(src), topic(dst)],
        "data": "0x" + amount.to_bytes(32, "big").hex(),
    }


moves = st.lists(
    st.tuples(
        st.sampled_from(TOKENS),
        st.sampled_from(ACCOUNTS),
        st.sampled_from(ACCOUNTS),
        st.integers(min_value=0, max_value=2**128),
    ),
    max_size=20,
)


@settings(max_examples=300, deadline=None)
@given(moves)
def test_gross_outflows_are_every_amount_sent_and_net_is_in_minus_out(entries):
    net, out = changes_from_logs([transfer_log(t, s, d, a) for t, s, d, a in entries])
    for account in ACCOUNTS:
        for token in TOKENS:
            asset = NATIVE if token == NATIVE_LOG_ADDRESS else token
            sent = sum(a for t, s, _, a in entries if t == token and s == account)
            got = sum(a for t, _, d, a in entries if t == token and d == account)
            assert -out.get((account, asset), 0) == sent
            assert net.get((account, asset), 0) == got - sent


def test_weth_deposit_and_withdrawal_move_weth_without_a_transfer_log():
    weth, me = "0x" + "e7" * 20, ACCOUNTS[0]
    word = "0x" + (5).to_bytes(32, "big").hex()
    net, out = changes_from_logs(
        [
            {"address": weth, "topics": [DEPOSIT, topic(me)], "data": word},
            {"address": weth, "topics": [WITHDRAWAL, topic(me)], "data": word},
        ]
    )
    assert net == {} and out == {(me, weth): -5}


def test_a_malformed_log_is_refused_not_guessed():
    import pytest

    with pytest.raises(ValueError):
        changes_from_logs(
            [{"address": TOKENS[1], "topics": [TRANSFER, "0x12", topic(ACCOUNTS[0])], "data": "0x00"}]
        )
