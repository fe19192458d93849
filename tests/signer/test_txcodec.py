"""Our EIP-1559 signing path must produce exactly what eth-account produces."""

import coincurve
from eth_account import Account
from eth_utils import to_checksum_address
from hypothesis import given, settings, strategies as st

from signer.wire.txcodec import Eip1559Tx, address_of, rlp_encode, sign_eip1559

keys = st.integers(min_value=1, max_value=2**256 - 2**129).map(lambda k: k.to_bytes(32, "big"))
addresses = st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())
u64 = st.integers(min_value=0, max_value=2**64 - 1)


@settings(max_examples=150, deadline=None)
@given(
    key=keys,
    to=addresses,
    nonce=u64,
    gas=st.integers(21000, 30_000_000),
    value=st.integers(0, 2**256 - 1),
    tip=u64,
    fee=u64,
    data=st.binary(max_size=300),
    chain_id=st.integers(1, 2**32),
)
def test_matches_eth_account_byte_for_byte(key, to, nonce, gas, value, tip, fee, data, chain_id):
    tx = Eip1559Tx(chain_id, nonce, tip, fee, gas, to, value, data)
    ours = sign_eip1559(tx, coincurve.PrivateKey(key))
    theirs = Account.sign_transaction(
        {
            "type": 2,
            "chainId": chain_id,
            "nonce": nonce,
            "maxPriorityFeePerGas": tip,
            "maxFeePerGas": fee,
            "gas": gas,
            "to": to_checksum_address(to),
            "value": value,
            "data": data,
            "accessList": [],
        },
        key,
    )
    assert ours.raw == bytes(theirs.raw_transaction)
    assert ours.tx_hash == bytes(theirs.hash)
    assert Account.recover_transaction(ours.raw).lower() == address_of(coincurve.PrivateKey(key))


def test_address_of_matches_eth_account():
    key = bytes(range(1, 33))
    assert address_of(coincurve.PrivateKey(key)) == Account.from_key(key).address.lower()


def test_rlp_known_vectors():
    # Vectors from the Ethereum RLP specification.
    assert rlp_encode(b"dog") == b"\x83dog"
    assert rlp_encode([b"cat", b"dog"]) == b"\xc8\x83cat\x83dog"
    assert rlp_encode(b"") == b"\x80"
    assert rlp_encode([]) == b"\xc0"
    assert rlp_encode(0) == b"\x80"
    assert rlp_encode(15) == b"\x0f"
    assert rlp_encode(1024) == b"\x82\x04\x00"
    assert rlp_encode(b"a" * 56) == b"\xb8\x38" + b"a" * 56
    assert rlp_encode([[], [[]], [[], [[]]]]) == bytes.fromhex("c7c0c1c0c3c0c1c0")


def test_rlp_refuses_negative_and_unknown_types():
    import pytest

    with pytest.raises(ValueError):
        rlp_encode(-1)
    with pytest.raises(TypeError):
        rlp_encode("text")  # type: ignore[arg-type]


@given(st.integers(min_value=0, max_value=2**600))
def test_the_inline_integer_encoding_is_the_byte_string_encoding_of_its_minimal_bytes(value):
    from signer.wire.txcodec import _rlp_bytes, _rlp_uint

    assert _rlp_uint(value) == _rlp_bytes(value.to_bytes((value.bit_length() + 7) // 8, "big"))
