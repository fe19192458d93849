"""The audit scrub and canonical text give what the code before them gave, for any record.

`signer.store.audit.prepare` was made cheaper (gated regular expressions, one loop per container
kind, no circular check in the encoder). Records already in homes were written by the old code and
are chained and verified over their exact text, so the new code must refuse the same records with
the same error, redact the same runs, and write the same bytes: `tests/signer/audit_reference.py`
is that old code, kept verbatim, and the oracle here.
"""

from __future__ import annotations

import copy
import enum
import math

import pytest
from hypothesis import example, given, settings, strategies as st

from signer.store import audit
from signer.store.audit import prepare
from tests.signer import audit_reference as before

_HEX = "0123456789abcdefABCDEF"


class _Kind(str, enum.Enum):  # a str subclass, as the engine's statuses are
    SIGNED = "signed"
    LONG = "owl_0123456789ab_" + "x" * 24


# Pieces that trip, or nearly trip, each rule: tokens (whole, cut short, with bad characters), 64-hex
# runs with and without 0x, longer and shorter runs, all-digit runs, a newline after a run (the old
# anchored `$` accepts one), and ordinary text around them.
_PIECES = st.one_of(
    st.sampled_from(
        [
            "owl_",
            "owl_0123456789ab_",
            "owl_0123456789AB_",
            "A" * 20,
            "Ab3-" * 6,
            "_",
            "-",
            "0x",
            "\n",
            " ",
            "é",
            "\u2028",
            '"',
            "\\",
            "deadbeef" * 8,
            "deadbeef" * 9,
            "1" * 64,
            "1" * 78,
            "f" * 63,
        ]
    ),
    st.text(_HEX, min_size=60, max_size=70),
    st.text(min_size=0, max_size=12),
)
_TEXT = st.lists(_PIECES, max_size=6).map("".join)
_KEYS = st.one_of(
    st.sampled_from(
        [
            "note",
            "reason",
            "agent_reason_unverified",
            "tx_hash",
            "request_hash",
            "policy_hash",
            "data",
            "calldata",
            "salt",
            "topic",
            "topics",
            "idempotency_key",
            "to",
            "key",
            "secret",
            "items",
            "",
            "Hash",
            "hash_",
            "HASH",
        ]
    ),
    st.text(max_size=10),
)
_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**63, max_value=10**80),
    st.floats(allow_nan=False),
    _TEXT,
    st.sampled_from(list(_Kind)),
)
_BODY = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(_KEYS, inner, max_size=5)
    ),
    max_leaves=30,
)


def _outcome(fn, body):
    try:
        return "ok", fn(body)
    except Exception as exc:  # noqa: BLE001 - any failure must be the same failure
        return type(exc).__name__, str(exc)


def _assert_same(body):
    kept = copy.deepcopy(body)
    old = _outcome(before.prepared_text, body)
    new = _outcome(lambda b: prepare("k", b).text, body)
    assert new == old
    assert body == kept  # neither changes what it was given


@given(body=st.dictionaries(_KEYS, _BODY, max_size=6))
@settings(max_examples=800, deadline=None)
@example(body={"reason": "pay " + "ab" * 32 + " owl_0123456789ab_" + "x" * 20})
@example(body={"note": ["0x" + "cd" * 32, {"x": "owl_0123456789ab_" + "y" * 30}]})
@example(body={"key": "0x" + "ab" * 32 + "\n"})
@example(body={"amount": "1" * 64, "tx_hash": "0x" + "ab" * 32, "t": ("a" * 80, ["deadbeef" * 8])})
def test_prepare_refuses_redacts_and_writes_what_the_old_code_did(body):
    _assert_same(body)


@given(text=_TEXT, key=_KEYS)
@settings(max_examples=1000, deadline=None)
def test_one_string_under_any_key_is_judged_as_before(text, key):
    _assert_same({key: text})
    _assert_same({key: [text, (text,)]})  # an item is checked under its list's key


def test_the_records_a_signature_writes_are_unchanged(signer_records):
    for kind, body in signer_records:
        assert prepare(kind, body).text == before.prepared_text(body)


@pytest.fixture()
def signer_records():
    """A `sign.decided` and a `sign.signed` body as the engine builds them (taken from a real run)."""
    hash_ = "b14b9a0018b5472ef53ab040ca58a5abbac6ee08f30ba8541d29cf06d491243c"
    friend = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
    reason = f"0.000000000000001 ETH to {friend}: dev-friend is in the address book"
    finding = {"outcome": "allow", "rule_id": "recipient.known", "reason": reason}
    decided = {
        "request_id": "req_06612ff353ba03c6e58c11393d8116de",
        "client": "bench",
        "source": "agent",
        "idempotency_key": "bench-2282-0-0000000",
        "request_hash": hash_,
        "call": {
            "chain_id": 31337,
            "to": friend,
            "value": "1000",
            "data": "0x",
            "flags": [],
            "authorization_list": False,
            "raw_hash_signature": False,
        },
        "actions": [
            {"type": "transfer", "chain_id": 31337, "asset": "native", "recipient": friend, "amount": "1000"}
        ],
        "context": {
            "now": 1795708435.5158057,
            "spent": {"31337:native:86400": "0"},
            "tx_count": {"3600": 0},
            "seen_recipients": [],
            "prices": {},
            "session_key_expires_at": 1796313235.5067744,
            "session_key_balance_cap": "100000000000000000",
            "frozen": False,
        },
        "policy_hash": "6b75f63a03a7f4354c1f18e36a03fc01d252c2cc8f14a56b33fba995c4d60f6c",
        "decision": {
            **finding,
            "findings": [finding, {**finding, "rule_id": "asset.within_limits"}],
            "spends": [{"chain_id": 31337, "asset": "native", "amount": "1000", "usd_micros": None}],
            "new_recipients": [],
        },
        "agent_reason_unverified": "pay my friend " + "ee" * 32,
        "pre_check": None,
    }
    signed = {
        "request_id": decided["request_id"],
        "tx_hash": "0x" + hash_,
        "sender": friend,
        "key_id": "sk_f6cb0426",
        "tx": {
            "type": 2,
            "chain_id": 31337,
            "nonce": 0,
            "gas": 21000,
            "to": friend,
            "value": "1000",
            "data": "0x",
        },
    }
    return [("sign.decided", decided), ("sign.signed", signed)]


def test_special_floats_and_big_integers_are_written_as_before():
    body = {
        "x": [math.inf, -math.inf, 1e16, 1e-5, -0.0, 10**80],
        "y": {3: "a", 4: "owl_0123456789ab_" + "z" * 20},
    }
    _assert_same(body)


def test_a_record_that_is_not_json_fails_as_before():
    for body in ({"x": {1, 2}}, {"x": b"bytes"}, {1: "a", "b": 2}):
        with pytest.raises(TypeError):
            before.prepared_text(body)
        with pytest.raises(TypeError):
            prepare("k", body)


def test_a_cycle_fails_as_before():
    body: dict = {"a": []}
    body["a"].append(body)
    with pytest.raises(RecursionError):
        before.prepared_text(body)
    with pytest.raises(RecursionError):
        prepare("k", body)


def test_the_fast_hex_check_finds_exactly_what_the_redaction_would():
    """`_HEX_RUN` (one look per run) gates `_HEX64_ANYWHERE` (a look at every digit): same verdict."""
    for text in (
        "",
        "a" * 63,
        "a" * 64,
        "x" + "a" * 64 + "x",
        "0x" + "a" * 63 + "g",
        "a" * 63 + "0x" + "a" * 64,
        ("a" * 63 + " ") * 3,
        "A" * 200,
    ):
        assert (audit._HEX_RUN.search(text) is None) == (audit._HEX64_ANYWHERE.search(text) is None)


@given(text=st.text(_HEX + "0xg ", max_size=200))
@settings(max_examples=1000, deadline=None)
def test_the_fast_hex_check_agrees_on_any_text(text):
    assert (audit._HEX_RUN.search(text) is None) == (audit._HEX64_ANYWHERE.search(text) is None)
