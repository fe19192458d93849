import pytest
from eth_abi import encode
from eth_utils import keccak as eth_keccak
from hypothesis import given, settings, strategies as st

from policies import decode as d
from policies.decode import decode, encode_erc20_transfer, selector_of
from policies.intent import NATIVE, Approval, Call, ContractCall, Flag, Forbidden, Transfer

CHAIN = 31337
TOKEN = "0x" + "aa" * 20
ALICE = "0x" + "11" * 20
BOB = "0x" + "22" * 20
SAFE = "0x" + "5a" * 20
MAX = 2**256 - 1

SIGNATURES = {
    d.TRANSFER: "transfer(address,uint256)",
    d.TRANSFER_FROM: "transferFrom(address,address,uint256)",
    d.APPROVE: "approve(address,uint256)",
    d.INCREASE_ALLOWANCE: "increaseAllowance(address,uint256)",
    d.PERMIT: "permit(address,address,uint256,uint256,uint8,bytes32,bytes32)",
    d.PERMIT2_APPROVE: "approve(address,address,uint160,uint48)",
    d.SET_APPROVAL_FOR_ALL: "setApprovalForAll(address,bool)",
    d.MULTICALL: "multicall(bytes[])",
    d.MULTICALL_DEADLINE: "multicall(uint256,bytes[])",
    d.EXEC_TRANSACTION: "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
    d.MULTI_SEND: "multiSend(bytes)",
    d.EXECUTE: "execute(address,uint256,bytes)",
    d.EXECUTE_BATCH_3: "executeBatch(address[],uint256[],bytes[])",
    d.EXECUTE_BATCH_TUPLES: "executeBatch((address,uint256,bytes)[])",
    d.EXECUTE_BATCH_2: "executeBatch(address[],bytes[])",
}


def abi(signature: str, *args) -> bytes:
    types = signature[signature.index("(") + 1 : -1]
    split, depth, start = [], 0, 0
    for i, ch in enumerate(types):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            split.append(types[start:i])
            start = i + 1
    split.append(types[start:])
    return selector_of(signature) + encode([t for t in split if t], list(args))


def known_call(target: str, selector: bytes, depth: int, value: int = 0) -> ContractCall:
    """A call the decoder recognised and read completely."""
    return ContractCall(CHAIN, target, selector, depth, value, True)


def run(data: bytes = b"", to: str = TOKEN, value: int = 0, **kw) -> tuple:
    return decode(Call(CHAIN, to, value, data, **kw)).actions


def rules(actions) -> list[str]:
    return [a.rule_id for a in actions if isinstance(a, Forbidden)]


def exec_tx(to: str, value: int, data: bytes, operation: int = 0, gas_price: int = 0) -> bytes:
    return abi(
        SIGNATURES[d.EXEC_TRANSACTION],
        to,
        value,
        data,
        operation,
        0,
        0,
        gas_price,
        "0x" + "00" * 20,
        "0x" + "00" * 20,
        b"\x01" * 65,
    )


def multisend_entry(op: int, to: str, value: int, data: bytes) -> bytes:
    return (
        bytes([op]) + bytes.fromhex(to[2:]) + value.to_bytes(32, "big") + len(data).to_bytes(32, "big") + data
    )


def test_selectors_equal_keccak_of_signatures():
    assert selector_of("") == bytes.fromhex("c5d24601")  # keccak256("") starts c5d2460186f7...
    for selector, signature in SIGNATURES.items():
        assert selector == selector_of(signature) == eth_keccak(text=signature)[:4], signature


def test_plain_native_transfer():
    assert run(to=ALICE, value=5) == (Transfer(CHAIN, NATIVE, ALICE, 5),)


def test_empty_call_has_no_actions():
    assert run(to=ALICE) == ()


def test_erc20_transfer_and_helper():
    data = encode_erc20_transfer(ALICE, 7)
    assert data == abi("transfer(address,uint256)", ALICE, 7)
    assert run(data) == (known_call(TOKEN, d.TRANSFER, 0), Transfer(CHAIN, TOKEN, ALICE, 7))
    with pytest.raises(ValueError):
        encode_erc20_transfer("0x12", 1)
    with pytest.raises(ValueError):
        encode_erc20_transfer(ALICE, -1)


def test_transfer_from_counts_the_to_argument():
    actions = run(abi("transferFrom(address,address,uint256)", BOB, ALICE, 9))
    assert actions[1] == Transfer(CHAIN, TOKEN, ALICE, 9)


@pytest.mark.parametrize(
    ("signature", "method"),
    [("approve(address,uint256)", "approve"), ("increaseAllowance(address,uint256)", "increaseAllowance")],
)
def test_approvals(signature, method):
    assert run(abi(signature, BOB, 3))[1] == Approval(CHAIN, TOKEN, BOB, 3, method)


def test_permit():
    data = abi(SIGNATURES[d.PERMIT], ALICE, BOB, 11, 2**40, 27, b"\x01" * 32, b"\x02" * 32)
    assert run(data)[1] == Approval(CHAIN, TOKEN, BOB, 11, "permit")


def test_permit2_approve_and_its_unlimited_amount():
    permit2 = "0x000000000022d473030f116ddee9f6b43ac78ba3"
    assert run(abi(SIGNATURES[d.PERMIT2_APPROVE], TOKEN, BOB, 5, 2**40), to=permit2)[1] == Approval(
        CHAIN, TOKEN, BOB, 5, "permit2"
    )
    assert run(abi(SIGNATURES[d.PERMIT2_APPROVE], TOKEN, BOB, 2**160 - 1, 0), to=permit2)[1].amount == MAX


def test_set_approval_for_all():
    assert run(abi(SIGNATURES[d.SET_APPROVAL_FOR_ALL], BOB, True))[1] == Approval(
        CHAIN, TOKEN, BOB, MAX, "setApprovalForAll"
    )
    assert run(abi(SIGNATURES[d.SET_APPROVAL_FOR_ALL], BOB, False))[1].amount == 0


def test_multicall_both_forms_decode_each_element_one_level_down():
    inner = [abi("approve(address,uint256)", BOB, MAX), encode_erc20_transfer(ALICE, 1)]
    for data in (abi("multicall(bytes[])", inner), abi("multicall(uint256,bytes[])", 123, inner)):
        actions = run(data)
        assert actions[1:] == (
            known_call(TOKEN, d.APPROVE, 1),
            Approval(CHAIN, TOKEN, BOB, MAX, "approve"),
            known_call(TOKEN, d.TRANSFER, 1),
            Transfer(CHAIN, TOKEN, ALICE, 1),
        )


def test_exec_transaction_inner_call_and_its_value():
    actions = run(exec_tx(TOKEN, 4, encode_erc20_transfer(ALICE, 2)), to=SAFE)
    assert actions == (
        known_call(SAFE, d.EXEC_TRANSACTION, 0),
        Transfer(CHAIN, NATIVE, TOKEN, 4),
        known_call(TOKEN, d.TRANSFER, 1, 4),
        Transfer(CHAIN, TOKEN, ALICE, 2),
    )


def test_exec_transaction_delegatecall_bad_operation_and_refund():
    assert rules(run(exec_tx(TOKEN, 0, b"", operation=1), to=SAFE)) == ["forbidden.delegatecall"]
    assert rules(run(exec_tx(TOKEN, 0, b"", operation=2), to=SAFE)) == ["decode.malformed"]
    assert rules(run(exec_tx(TOKEN, 0, b"", gas_price=1), to=SAFE)) == ["forbidden.safe_refund"]


def test_multisend_entries():
    packed = multisend_entry(0, ALICE, 3, b"") + multisend_entry(0, TOKEN, 0, encode_erc20_transfer(BOB, 8))
    actions = run(abi("multiSend(bytes)", packed), to=SAFE)
    assert actions[1:] == (
        Transfer(CHAIN, NATIVE, ALICE, 3),
        known_call(TOKEN, d.TRANSFER, 1),
        Transfer(CHAIN, TOKEN, BOB, 8),
    )


def test_multisend_delegatecall_and_truncation():
    assert "forbidden.delegatecall" in rules(
        run(abi("multiSend(bytes)", multisend_entry(1, ALICE, 0, b"")), to=SAFE)
    )
    truncated = multisend_entry(0, ALICE, 0, b"\x01\x02\x03\x04")[:-1]
    assert rules(run(abi("multiSend(bytes)", truncated), to=SAFE)) == ["decode.malformed"]
    assert rules(run(abi("multiSend(bytes)", b"\x00" * 40), to=SAFE)) == ["decode.malformed"]


def test_erc4337_execute_and_batches():
    xfer = encode_erc20_transfer(ALICE, 1)
    account = SAFE
    expected_inner = (known_call(TOKEN, d.TRANSFER, 1), Transfer(CHAIN, TOKEN, ALICE, 1))
    assert run(abi(SIGNATURES[d.EXECUTE], TOKEN, 0, xfer), to=account)[1:] == expected_inner
    assert run(abi(SIGNATURES[d.EXECUTE_BATCH_2], [TOKEN], [xfer]), to=account)[1:] == expected_inner
    assert run(abi(SIGNATURES[d.EXECUTE_BATCH_TUPLES], [(TOKEN, 0, xfer)]), to=account)[1:] == expected_inner
    batch = run(abi(SIGNATURES[d.EXECUTE_BATCH_3], [TOKEN, BOB], [0, 6], [xfer, b""]), to=account)
    assert batch[1:] == (*expected_inner, Transfer(CHAIN, NATIVE, BOB, 6))
    tuples = run(abi(SIGNATURES[d.EXECUTE_BATCH_TUPLES], [(BOB, 6, b"")]), to=account)
    assert tuples[1:] == (Transfer(CHAIN, NATIVE, BOB, 6),)
    mismatched = run(abi(SIGNATURES[d.EXECUTE_BATCH_2], [TOKEN, BOB], [xfer]), to=account)
    assert rules(mismatched) == ["decode.malformed"]


def test_deep_nesting_is_decoded_then_refused():
    data = abi("approve(address,uint256)", BOB, MAX)
    for _ in range(3):
        data = abi("multicall(bytes[])", [data])
    assert Approval(CHAIN, TOKEN, BOB, MAX, "approve") in run(data)
    for _ in range(6):
        data = abi("multicall(bytes[])", [data])
    actions = run(data)
    assert rules(actions) == ["decode.too_deep"]
    assert not any(isinstance(a, Approval) for a in actions)
    assert rules(decode(Call(CHAIN, TOKEN, 0, data), max_depth=20).actions) == []


def test_too_many_inner_calls():
    data = abi("multicall(bytes[])", [b""] * 200)
    assert rules(run(abi("multicall(bytes[])", [data, data]))) == ["decode.malformed"]
    assert rules(run(abi("multicall(bytes[])", [b""] * 257))) == ["decode.malformed"]


def test_7702_and_raw_hash_are_forbidden_first():
    actions = run(to=ALICE, value=1, authorization_list=True, raw_hash_signature=True)
    assert rules(actions) == ["forbidden.eip7702", "forbidden.raw_hash"]
    assert actions[2] == Transfer(CHAIN, NATIVE, ALICE, 1)


@pytest.mark.parametrize(
    "data",
    [
        b"\xa9\x05\x9c",  # shorter than a selector
        abi("transfer(address,uint256)", ALICE, 1)[:-1],  # short arguments
        d.TRANSFER + b"\x01" + b"\x00" * 31 + (1).to_bytes(32, "big"),  # dirty address high bits
        d.SET_APPROVAL_FOR_ALL + b"\x00" * 32 + (2).to_bytes(32, "big"),  # bool not 0/1
        d.MULTICALL + (2**200).to_bytes(32, "big"),  # offset out of range
        d.MULTICALL + (32).to_bytes(32, "big") + (2**64).to_bytes(32, "big"),  # absurd array length
        abi(SIGNATURES[d.PERMIT2_APPROVE], TOKEN, BOB, 1, 1)[:-32]
        + (2**48).to_bytes(32, "big"),  # uint48 overflow
    ],
)
def test_malformed_known_selectors(data):
    assert "decode.malformed" in rules(run(data))


def test_unknown_selector_is_an_undecoded_contract_call():
    assert run(b"\xde\xad\xbe\xef" + b"\x00" * 7, value=3) == (
        Transfer(CHAIN, NATIVE, TOKEN, 3),
        ContractCall(CHAIN, TOKEN, b"\xde\xad\xbe\xef", 0, 3, False),
    )


def test_inner_calls_keep_chain_and_flags():
    flags = frozenset({Flag.FROM_SKILL})
    decoded = decode(
        Call(CHAIN, TOKEN, 0, abi("multicall(bytes[])", [encode_erc20_transfer(ALICE, 1)]), flags)
    )
    assert decoded.call.flags == flags and all(
        getattr(a, "chain_id", CHAIN) == CHAIN for a in decoded.actions
    )


KNOWN = list(SIGNATURES)


@settings(max_examples=400)
@given(st.binary(max_size=600), st.sampled_from([b"", *KNOWN]), st.integers(0, 2**256 - 1))
def test_decode_never_raises(payload, selector, value):
    decoded = decode(Call(CHAIN, TOKEN, value, selector + payload))
    assert isinstance(decoded.actions, tuple)


words = st.one_of(st.integers(0, 2**256 - 1), st.integers(0, 1024), st.sampled_from([0, 32, 64, 96, 2**160]))


@settings(max_examples=400)
@given(st.sampled_from(KNOWN), st.lists(words, max_size=14), st.binary(max_size=64))
def test_decode_never_raises_on_word_shaped_garbage(selector, values, tail):
    data = selector + b"".join(v.to_bytes(32, "big") for v in values) + tail
    decode(Call(CHAIN, TOKEN, 0, data))


def test_decode_never_raises_on_odd_call_fields():
    assert rules(decode(Call(CHAIN, "0xABC", 0)).actions) == ["decode.malformed"]
    assert rules(decode(Call(CHAIN, ALICE, -1)).actions) == ["decode.malformed"]
