"""Properties: look-alike detection is symmetric and never fires on one address; amounts round-trip."""

from __future__ import annotations

from hypothesis import given, strategies as st

from bot.tools.catalog import standard_tools
from bot.tools.contacts import lookalike, parse_address, to_checksum
from bot.tools.wallet import AssetRef, describe_amount
from policies.units import format_amount, parse_units

HEX = "0123456789abcdefABCDEF"
bodies = st.text(alphabet=HEX, min_size=40, max_size=40)


@st.composite
def address_pairs(draw):
    a = draw(bodies)
    if draw(st.booleans()):  # half the time, a candidate imitation: same first 4 and last 4
        b = a[:4] + draw(st.text(alphabet=HEX, min_size=32, max_size=32)) + a[-4:]
    else:
        b = draw(bodies)
    return "0x" + a, "0x" + b


@given(address_pairs())
def test_lookalike_is_symmetric_and_false_for_identical(pair):
    a, b = pair
    assert lookalike(a, b) == lookalike(b, a)
    assert not lookalike(a, a) and not lookalike(a, a.lower()) and not lookalike(a, to_checksum(a))
    if lookalike(a, b):
        assert a.lower() != b.lower()
        assert a[2:6].lower() == b[2:6].lower() and a[-4:].lower() == b[-4:].lower()


@given(bodies)
def test_checksum_is_accepted_and_idempotent(body):
    checksummed = to_checksum("0x" + body)
    assert parse_address(checksummed) == checksummed == parse_address("0x" + body.lower())


@given(st.integers(min_value=0, max_value=2**256 - 1), st.integers(min_value=0, max_value=36))
def test_amount_formatting_round_trips_base_units(amount, decimals):
    text = format_amount(amount, decimals, "TKN")
    number, symbol = text.split(" ")
    assert symbol == "TKN" and parse_units(number, decimals) == amount
    shown = describe_amount(amount, AssetRef("native", "TKN", decimals))
    assert shown == text  # units only: base units are for /details and the signer
    priced = describe_amount(amount, AssetRef("native", "TKN", decimals), "2.5")
    assert priced.startswith(f"{text} (about $") and priced.endswith(")")


def test_catalog_names_levels_and_no_sign_tools():
    tools = {t.name: t.level.value for t in standard_tools()}
    assert tools == {
        "wallet_balance": "read",
        "address_book": "read",
        "portfolio": "read",
        "price": "read",
        "tx_status": "read",
        "memory_search": "read",
        "memory_get": "read",
        "list_notes": "read",
        "remember": "write",
        "contact_add": "write",
        "contact_remove": "write",
        "set_reminder": "write",
        "list_reminders": "read",
        "cron_add": "write",
        "cron_list": "read",
        "cron_remove": "write",
    }
    for t in standard_tools():
        assert t.spec().parameters["additionalProperties"] is False
        assert (t.confirmation is not None) == (t.level.value == "write")
