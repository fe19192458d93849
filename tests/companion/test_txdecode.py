"""The signer's reading of a companion-signed transaction: exact, and strict about everything else."""

from __future__ import annotations

import coincurve
import pytest
from eth_account import Account
from hypothesis import given, settings, strategies as st

from policies.kernel.addresses import to_checksum
from signer.tier1.main_tx import mismatch
from signer.txdecode import TxDecodeError, decode_signed_eip1559
from signer.wire.txcodec import Eip1559Tx, address_of, sign_eip1559

KEY = coincurve.PrivateKey(bytes.fromhex("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"))
MAIN = address_of(KEY)

txs = st.builds(
    Eip1559Tx,
    chain_id=st.integers(1, 2**32),
    nonce=st.integers(0, 2**64 - 1),
    max_priority_fee_per_gas=st.integers(0, 10**12),
    max_fee_per_gas=st.integers(10**12, 10**13),
    gas=st.integers(21_000, 10**7),
    to=st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex()),
    value=st.integers(0, 2**255),
    data=st.binary(max_size=200),  # room to add a delta within uint256
)


def approved(tx: Eip1559Tx) -> dict:
    return {
        "from": to_checksum(MAIN),
        "chain_id": tx.chain_id,
        "to": to_checksum(tx.to),
        "value": str(tx.value),
        "data": "0x" + tx.data.hex(),
        "nonce": tx.nonce,
        "gas_limit": tx.gas,
        "max_fee_per_gas": str(tx.max_fee_per_gas),
    }


@settings(max_examples=150, deadline=None)
@given(tx=txs)
def test_decode_matches_eth_account_and_recovers_the_signer(tx):
    signed = sign_eip1559(tx, KEY)
    decoded = decode_signed_eip1559(signed.raw)
    assert decoded.tx == tx and decoded.sender == MAIN and decoded.tx_hash == "0x" + signed.tx_hash.hex()
    assert Account.recover_transaction(signed.raw).lower() == MAIN
    assert mismatch(approved(tx), decoded, MAIN) is None


FIELDS = ["chain_id", "nonce", "to", "value", "data", "gas", "max_fee_per_gas"]


@settings(max_examples=300, deadline=None)
@given(tx=txs, field=st.sampled_from(FIELDS), delta=st.integers(1, 2**16))
def test_any_change_to_a_signed_field_is_refused(tx, field, delta):
    """Whatever the companion (or anyone) signs, only the exact approved tx passes the comparison."""
    values = {f: getattr(tx, f) for f in Eip1559Tx.__slots__}
    if field == "to":
        values["to"] = "0x" + (int(tx.to, 16) ^ delta % 2**160 or 1).to_bytes(20, "big").hex()
    elif field == "data":
        values["data"] = tx.data + delta.to_bytes(3, "big")
    elif field == "max_fee_per_gas":
        values[field] = tx.max_fee_per_gas + delta  # above the bound; below it is allowed
    elif field == "gas":
        values[field] = tx.gas + delta
    else:
        values[field] = getattr(tx, field) + delta
    changed = Eip1559Tx(**values)
    decoded = decode_signed_eip1559(sign_eip1559(changed, KEY).raw)
    assert mismatch(approved(tx), decoded, MAIN) is not None


def test_another_signer_and_a_lower_fee_are_judged_correctly():
    tx = Eip1559Tx(31337, 0, 1, 10**9, 21_000, "0x" + "11" * 20, 5)
    other = coincurve.PrivateKey(b"\x02" * 32)
    assert "signer" in mismatch(approved(tx), decode_signed_eip1559(sign_eip1559(tx, other).raw), MAIN)
    cheaper = Eip1559Tx(31337, 0, 1, 10**9 - 1, 21_000, "0x" + "11" * 20, 5)
    assert mismatch(approved(tx), decode_signed_eip1559(sign_eip1559(cheaper, KEY).raw), MAIN) is None


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=300))
def test_garbage_is_a_decode_error_never_a_crash(raw):
    try:
        decode_signed_eip1559(raw)
    except TxDecodeError:
        pass


@pytest.mark.parametrize(
    "mutate",
    [
        lambda raw: raw + b"\x00",  # trailing bytes
        lambda raw: raw[:-1],  # truncated
        lambda raw: b"\x01" + raw[1:],  # another tx type
    ],
)
def test_non_canonical_or_foreign_encodings_are_refused(mutate):
    raw = sign_eip1559(Eip1559Tx(1, 0, 1, 2, 21_000, "0x" + "22" * 20, 1), KEY).raw
    with pytest.raises(TxDecodeError):
        decode_signed_eip1559(mutate(raw))
