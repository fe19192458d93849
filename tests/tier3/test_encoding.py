"""The hand-written Tier 3 encoding against independent implementations (eth-abi, eth-account's
EIP-712) and against the ABI shipped in the npm package, on random delegations (hypothesis)."""

from __future__ import annotations

import json
import subprocess

import coincurve
import pytest
from eth_abi import encode as abi_encode
from eth_account.messages import encode_typed_data
from eth_utils import keccak
from hypothesis import HealthCheck, given, settings, strategies as st

from bot.devchain import PROJECT_ROOT
from signer.wire.delegation import (
    CALL_COUNTS,
    DISABLE_DELEGATION,
    DISABLED_DELEGATIONS,
    GET_AVAILABLE_AMOUNT,
    REDEEM_DELEGATIONS,
    Caveat,
    Delegation,
    DelegationError,
    disable_calldata,
    permission_context,
    recover,
    redeem_calldata,
    sign_digest,
)
from signer.wire.txcodec import address_of

ABIS = PROJECT_ROOT / "node_modules" / "@metamask" / "delegation-abis" / "dist" / "abis"
DELEGATION_TUPLE = "(address,address,bytes32,(address,bytes,bytes)[],uint256,bytes)"

addresses = st.binary(min_size=20, max_size=20).map(lambda b: "0x" + b.hex())
caveats = st.builds(Caveat, addresses, st.binary(max_size=130), st.binary(max_size=40))
delegations = st.builds(
    Delegation,
    addresses,
    addresses,
    st.lists(caveats, max_size=5).map(tuple),
    st.integers(0, 2**256 - 1),
    st.binary(min_size=32, max_size=32),
    st.binary(max_size=70),
)


def _as_tuple(d: Delegation) -> tuple:
    return (
        d.delegate,
        d.delegator,
        d.authority,
        [(c.enforcer, c.terms, c.args) for c in d.caveats],
        d.salt,
        d.signature,
    )


def _typed(d: Delegation, chain_id: int, manager: str) -> dict:
    return {
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            "Delegation": [
                {"name": "delegate", "type": "address"},
                {"name": "delegator", "type": "address"},
                {"name": "authority", "type": "bytes32"},
                {"name": "caveats", "type": "Caveat[]"},
                {"name": "salt", "type": "uint256"},
            ],
            "Caveat": [{"name": "enforcer", "type": "address"}, {"name": "terms", "type": "bytes"}],
        },
        "primaryType": "Delegation",
        "domain": {
            "name": "DelegationManager",
            "version": "1",
            "chainId": chain_id,
            "verifyingContract": manager,
        },
        "message": {
            "delegate": d.delegate,
            "delegator": d.delegator,
            "authority": d.authority,
            "caveats": [{"enforcer": c.enforcer, "terms": c.terms} for c in d.caveats],
            "salt": d.salt,
        },
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=delegations, chain_id=st.integers(1, 2**63), manager=addresses)
def test_eip712_digest_matches_eth_account(d, chain_id, manager):
    from eth_utils import to_checksum_address

    signable = encode_typed_data(
        full_message=_typed(
            Delegation(
                to_checksum_address(d.delegate),
                to_checksum_address(d.delegator),
                d.caveats,
                d.salt,
                d.authority,
            ),
            chain_id,
            to_checksum_address(manager),
        )
    )
    expected = keccak(b"\x19" + signable.version + signable.header + signable.body)
    assert d.signing_digest(chain_id, manager) == expected


@settings(max_examples=40, deadline=None)
@given(d=delegations, chain_id=st.integers(1, 2**63), manager=addresses)
def test_typed_data_for_the_phone_companion_hashes_to_the_signing_digest(d, chain_id, manager):
    """What a browser/phone EIP-712 library gets (JSON, numbers as decimal strings) signs the same digest."""
    from eth_utils import to_checksum_address

    document = json.loads(json.dumps(d.typed_data(chain_id, manager)))
    message = document["message"]
    message["salt"] = int(message["salt"])
    for field in ("delegate", "delegator"):
        message[field] = to_checksum_address(message[field])
    document["domain"]["verifyingContract"] = to_checksum_address(document["domain"]["verifyingContract"])
    signable = encode_typed_data(full_message=document)
    assert keccak(b"\x19" + signable.version + signable.header + signable.body) == d.signing_digest(
        chain_id, manager
    )


@settings(max_examples=60, deadline=None)
@given(
    chain=st.lists(delegations, min_size=1, max_size=3),
    target=addresses,
    value=st.integers(0, 2**256 - 1),
    data=st.binary(max_size=100),
)
def test_abi_encoding_matches_eth_abi(chain, target, value, data):
    context = abi_encode([f"{DELEGATION_TUPLE}[]"], [[_as_tuple(d) for d in chain]])
    assert permission_context(chain) == context
    execution = bytes.fromhex(target[2:]) + value.to_bytes(32, "big") + data
    expected = REDEEM_DELEGATIONS + abi_encode(
        ["bytes[]", "bytes32[]", "bytes[]"], [[context], [b"\x00" * 32], [execution]]
    )
    assert redeem_calldata(chain, target, value, data) == expected
    assert disable_calldata(chain[0]) == DISABLE_DELEGATION + abi_encode(
        [DELEGATION_TUPLE], [_as_tuple(chain[0])]
    )


@given(d=delegations)
def test_json_form_round_trips(d):
    assert Delegation.from_json(json.loads(json.dumps(d.to_json()))) == d


def _abi(name: str) -> list[dict]:
    script = f"console.log(JSON.stringify(require({json.dumps(str(ABIS / (name + '.cjs')))}).abi))"
    return json.loads(
        subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout
    )


def _selector(entry: dict) -> bytes:
    def kind(p: dict) -> str:
        if p["type"].startswith("tuple"):
            return "(" + ",".join(kind(c) for c in p["components"]) + ")" + p["type"][5:]
        return p["type"]

    return keccak(f"{entry['name']}({','.join(kind(p) for p in entry['inputs'])})".encode())[:4]


def test_selectors_are_the_shipped_abi():
    manager = {e["name"]: _selector(e) for e in _abi("DelegationManager") if e["type"] == "function"}
    assert manager["redeemDelegations"] == REDEEM_DELEGATIONS
    assert manager["disableDelegation"] == DISABLE_DELEGATION
    assert manager["disabledDelegations"] == DISABLED_DELEGATIONS
    period = {
        e["name"]: _selector(e) for e in _abi("NativeTokenPeriodTransferEnforcer") if e["type"] == "function"
    }
    assert period["getAvailableAmount"] == GET_AVAILABLE_AMOUNT
    calls = {e["name"]: _selector(e) for e in _abi("LimitedCallsEnforcer") if e["type"] == "function"}
    assert calls["callCounts"] == CALL_COUNTS


@given(digest=st.binary(min_size=32, max_size=32), secret=st.integers(1, 2**255))
def test_signatures_recover_and_high_s_is_refused(digest, secret):
    key = coincurve.PrivateKey(secret.to_bytes(32, "big"))
    sig = sign_digest(digest, key)
    assert recover(digest, sig) == address_of(key)
    n = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
    s = int.from_bytes(sig[32:64], "big")
    malleable = sig[:32] + (n - s).to_bytes(32, "big") + bytes([55 - sig[64]])
    with pytest.raises(DelegationError, match="upper half"):
        recover(digest, malleable)
