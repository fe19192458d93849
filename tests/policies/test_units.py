import pytest
from hypothesis import given, strategies as st

from policies.context import PriceQuote
from policies.units import format_amount, is_lookalike, parse_period, parse_units, usd_micros


@pytest.mark.parametrize(
    ("text", "decimals", "expected"),
    [
        ("0.01", 18, 10**16),
        ("1", 6, 10**6),
        ("0", 18, 0),
        ("1.5", 1, 15),
        ("1.50", 1, 15),
        (3, 2, 300),
        ("123456789.123456", 6, 123456789123456),
    ],
)
def test_parse_units(text, decimals, expected):
    assert parse_units(text, decimals) == expected


@pytest.mark.parametrize(
    "text", ["", "-1", "1e5", "1E5", ".5", "5.", "1,5", " 1", "0x10", "nan", "inf", "1.2.3"]
)
def test_parse_units_rejects_bad_text(text):
    with pytest.raises(ValueError):
        parse_units(text, 18)


def test_parse_units_rejects_too_many_decimals_and_odd_types():
    with pytest.raises(ValueError, match="more decimals"):
        parse_units("0.001", 2)
    for bad in (-1, True, 0.5, None):
        with pytest.raises(ValueError):
            parse_units(bad, 18)


@pytest.mark.parametrize(
    ("amount", "decimals", "expected"),
    [
        (10**16, 18, "0.01 ETH"),
        (0, 18, "0 ETH"),
        (10**18, 18, "1 ETH"),
        (1, 18, "0.000000000000000001 ETH"),
        (1500000, 6, "1.5 ETH"),
        (7, 0, "7 ETH"),
    ],
)
def test_format_amount(amount, decimals, expected):
    assert format_amount(amount, decimals, "ETH") == expected


@given(st.integers(min_value=0, max_value=2**256), st.integers(min_value=0, max_value=30))
def test_format_then_parse_round_trips(amount, decimals):
    number = format_amount(amount, decimals, "X").split(" ")[0]
    assert parse_units(number, decimals) == amount


@pytest.mark.parametrize(
    ("label", "seconds"), [("1h", 3600), ("24h", 86400), ("7d", 604800), ("30d", 2592000), ("90m", 5400)]
)
def test_parse_period(label, seconds):
    assert parse_period(label) == seconds


@pytest.mark.parametrize("label", ["", "0h", "1w", "1s", "h", "1.5h", "24H", " 1h", "-1h", 24])
def test_parse_period_rejects(label):
    with pytest.raises(ValueError):
        parse_period(label)


def test_usd_micros_rounds_up():
    quote = PriceQuote(usd_micros_per_unit=3000 * 10**6, decimals=18)
    assert usd_micros(10**16, quote) == 30 * 10**6  # 0.01 ETH at $3000 is exactly $30
    assert usd_micros(1, quote) == 1  # 1 wei is worth 3e-9 micro-dollars: rounded up, never to zero
    assert usd_micros(0, quote) == 0


def test_is_lookalike():
    a = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
    b = "0x7099" + "0" * 32 + "79c8"
    assert is_lookalike(a, b) and is_lookalike(b, a.upper().replace("0X", "0x"))
    assert not is_lookalike(a, a)
    assert not is_lookalike(a, "0x7099" + "0" * 32 + "79c9")
    assert not is_lookalike(a, "0x8099" + "0" * 32 + "79c8")
    assert not is_lookalike(a, "not an address")
