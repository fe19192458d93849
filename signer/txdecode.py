"""Decode a signed EIP-1559 transaction and recover its sender.

The companion returns a raw transaction signed by the user's main key. The signer never trusts
what the bridge or the companion says it contains: it parses the bytes here, recovers the signer
from the signature, and compares every field with the request the user approved.
"""

from __future__ import annotations

from dataclasses import dataclass

import coincurve

from policies.kernel.keccak import keccak256
from signer.wire.txcodec import SECP256K1_N, Eip1559Tx, rlp_encode

MAX_RAW_TX = 128 * 1024

RlpItem = bytes | list["RlpItem"]
"""An RLP item: a byte string, or a list of items."""


class TxDecodeError(ValueError):
    """The bytes are not one canonical, signed EIP-1559 transaction."""


def _length(data: bytes, pos: int, size: int) -> int:
    if pos + size > len(data):
        raise TxDecodeError("truncated length")
    raw = data[pos : pos + size]
    if raw[0] == 0:
        raise TxDecodeError("non-canonical length (leading zero)")
    value = int.from_bytes(raw, "big")
    if value < 56:
        raise TxDecodeError("non-canonical long length")
    return value


def _item(data: bytes, pos: int) -> tuple[RlpItem, int]:
    if pos >= len(data):
        raise TxDecodeError("truncated item")
    first = data[pos]
    if first < 0x80:
        return bytes([first]), pos + 1
    if first < 0xB8:
        length, start = first - 0x80, pos + 1
        if length == 1 and start < len(data) and data[start] < 0x80:
            raise TxDecodeError("non-canonical single byte")
    elif first < 0xC0:
        size = first - 0xB7
        length, start = _length(data, pos + 1, size), pos + 1 + size
    else:
        if first < 0xF8:
            length, start = first - 0xC0, pos + 1
        else:
            size = first - 0xF7
            length, start = _length(data, pos + 1, size), pos + 1 + size
        end = start + length
        if end > len(data):
            raise TxDecodeError("truncated list")
        items: list[RlpItem] = []
        cursor = start
        while cursor < end:
            item, cursor = _item(data, cursor)
            items.append(item)
        if cursor != end:
            raise TxDecodeError("list overruns its length")
        return items, end
    end = start + length
    if end > len(data):
        raise TxDecodeError("truncated string")
    return data[start:end], end


def rlp_decode(data: bytes) -> RlpItem:
    item, end = _item(data, 0)
    if end != len(data):
        raise TxDecodeError("trailing bytes after the RLP item")
    return item


def _int(value: RlpItem, name: str) -> int:
    if not isinstance(value, bytes) or len(value) > 32 or (value and value[0] == 0):
        raise TxDecodeError(f"{name} is not a canonical integer")
    return int.from_bytes(value, "big")


@dataclass(frozen=True, slots=True)
class DecodedTx:
    tx: Eip1559Tx
    sender: str
    tx_hash: str
    has_access_list: bool


def decode_signed_eip1559(raw: bytes) -> DecodedTx:
    if not raw or len(raw) > MAX_RAW_TX:
        raise TxDecodeError("empty or oversized transaction")
    if raw[0] != 0x02:
        raise TxDecodeError("not an EIP-1559 (type 2) transaction")
    fields = rlp_decode(raw[1:])
    if not isinstance(fields, list) or len(fields) != 12:
        raise TxDecodeError("an EIP-1559 transaction has 12 fields")
    to = fields[5]
    if not isinstance(to, bytes) or len(to) != 20:
        raise TxDecodeError("`to` must be a 20-byte address (contract creation is refused)")
    data, access_list = fields[7], fields[8]
    if not isinstance(data, bytes) or not isinstance(access_list, list):
        raise TxDecodeError("malformed data or access list")
    tx = Eip1559Tx(
        chain_id=_int(fields[0], "chain_id"),
        nonce=_int(fields[1], "nonce"),
        max_priority_fee_per_gas=_int(fields[2], "max_priority_fee_per_gas"),
        max_fee_per_gas=_int(fields[3], "max_fee_per_gas"),
        gas=_int(fields[4], "gas"),
        to="0x" + to.hex(),
        value=_int(fields[6], "value"),
        data=data,
    )
    y, r, s = _int(fields[9], "y_parity"), _int(fields[10], "r"), _int(fields[11], "s")
    if y > 1 or not 0 < r < SECP256K1_N or not 0 < s <= SECP256K1_N // 2:
        raise TxDecodeError("invalid or malleable signature")
    # The signing hash must be over the same access list the tx carries (we only accept empty ones).
    if access_list:
        return DecodedTx(tx, "", "0x" + keccak256(raw).hex(), True)
    if b"\x02" + rlp_encode(tx._fields() + [y, r, s]) != raw:
        raise TxDecodeError("the transaction is not canonically encoded")
    signature = r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes([y])
    try:
        public = coincurve.PublicKey.from_signature_and_message(signature, tx.signing_hash(), hasher=None)
    except Exception as exc:  # noqa: BLE001 - any failure means no valid signer
        raise TxDecodeError("the signature does not recover a public key") from exc
    sender = "0x" + keccak256(public.format(compressed=False)[1:])[-20:].hex()
    return DecodedTx(tx, sender, "0x" + keccak256(raw).hex(), False)
