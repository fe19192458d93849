"""One amount grammar for /send in chat and `owlia sign send`: the unit is always written.

Before: `/send ADDR 0.001` was 0.001 ETH in chat, `owlia sign send --value 5` was 5 wei, and
`1e999eth` said "unknown token 'e999eth'".
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from policies.units import NATIVE_UNITS, read_amount


@pytest.mark.parametrize("text", ["0.001", "5", " 12 ", "1000"])
def test_a_bare_number_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match="has no unit: write the number and its unit, e.g. 0.001eth"):
        read_amount(text)


@pytest.mark.parametrize("text", ["1e999eth", "1E5wei", "2.5e-3 eth", "1e18"])
def test_exponents_are_refused_as_exponents_not_as_tokens(text: str) -> None:
    with pytest.raises(ValueError, match="exponents are not accepted"):
        read_amount(text)


@pytest.mark.parametrize(
    "text",
    ["-1eth", "0x10eth", ".5eth", "1.eth", "1,5eth", "eth", "1  eth", "1\u00a0eth", "١eth", "1 eth eth", ""],
)
def test_anything_not_written_exactly_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        read_amount(text)


def test_units_and_exact_values() -> None:
    assert read_amount("0.001eth").native_wei() == 10**15
    assert read_amount("0.001 ETH").native_wei() == 10**15
    assert read_amount("12gwei").native_wei() == 12 * 10**9
    assert read_amount("1000wei").native_eth_text() == "0.000000000000001"
    assert read_amount("5USDC").unit == "usdc" and not read_amount("5usdc").native
    with pytest.raises(ValueError, match="more decimals than the asset allows"):
        read_amount("1.5wei").native_wei()


@given(
    wei=st.integers(min_value=0, max_value=10**30),
    unit=st.sampled_from(sorted(NATIVE_UNITS)),
    spaced=st.booleans(),
)
def test_native_amounts_round_trip_exactly(wei: int, unit: str, spaced: bool) -> None:
    decimals = NATIVE_UNITS[unit]
    whole, frac = divmod(wei, 10**decimals)
    number = f"{whole}.{str(frac).rjust(decimals, '0')}" if decimals and frac else str(whole)
    amount = read_amount(f"{number}{' ' if spaced else ''}{unit}")
    assert amount.native_wei() == wei
