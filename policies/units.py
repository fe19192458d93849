"""Exact conversions between what a user writes (decimal strings, "24h") and integers.

Amounts are integers of base units everywhere in the signer; floats never appear, so a limit
of "0.1" ETH is exactly 10**17 wei and not 0.1000000000000000055...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an annotation only: `owlia sign send` reads amounts without the policy context
    from policies.context import PriceQuote

_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_PERIOD = re.compile(r"([1-9][0-9]{0,5})([mhd])")
_PERIOD_UNITS = {"m": 60, "h": 3600, "d": 86400}
_MAX_DIGITS = 100  # far above any real amount; keeps int() away from pathological input
_ADDRESS = re.compile(r"0x[0-9a-f]{40}")


def parse_units(text: str | int, decimals: int) -> int:
    """Whole-unit amount -> base units: ("0.01", 18) -> 10**16; an int counts whole units.

    Refuses anything not written exactly: negatives, exponents, empty text, more decimals
    than the asset has. Trailing zeros past the asset's precision are harmless and accepted.
    """
    if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"decimals must be a non-negative integer, got {decimals!r}")
    if isinstance(text, bool):
        raise ValueError(f"amount must be a decimal string, got {text!r}")
    scale: int = 10**decimals  # an int: decimals is not negative (mypy types int ** int as Any)
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"amount must not be negative, got {text}")
        return text * scale
    if not isinstance(text, str):
        raise ValueError(f"amount must be a decimal string, got {type(text).__name__}")
    if len(text) > _MAX_DIGITS or not _DECIMAL.fullmatch(text):
        raise ValueError(f'{text!r} is not a plain non-negative decimal amount such as "0.01"')
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0")
    if len(frac) > decimals:
        raise ValueError(f"{text!r} has more decimals than the asset allows ({decimals})")
    return int(whole) * scale + (int(frac.ljust(decimals, "0")) if frac else 0)


def format_amount(amount: int, decimals: int, symbol: str) -> str:
    """Base units -> "0.01 ETH", exactly, without trailing zeros."""
    sign = "-" if amount < 0 else ""
    whole, frac = divmod(abs(amount), 10**decimals)
    frac_text = str(frac).rjust(decimals, "0").rstrip("0") if decimals else ""
    number = f"{whole}.{frac_text}" if frac_text else str(whole)
    return f"{sign}{number} {symbol}"


def parse_period(label: str) -> int:
    """Window label -> seconds: "90m", "24h", "7d". Only minutes, hours and days."""
    match = _PERIOD.fullmatch(label) if isinstance(label, str) else None
    if match is None:
        raise ValueError(f"{label!r} is not a period: use a positive number and m, h or d, e.g. 24h or 7d")
    return int(match.group(1)) * _PERIOD_UNITS[match.group(2)]


def usd_micros(amount: int, quote: PriceQuote) -> int:
    """Value in micro-dollars, rounded up: a limit check must never under-count."""
    scale: int = 10**quote.decimals  # an int: decimals is not negative (mypy types int ** int as Any)
    return -(-amount * quote.usd_micros_per_unit // scale)


def is_lookalike(a: str, b: str) -> bool:
    """Different addresses that share the first and last four hex digits, the ones people check."""
    a, b = a.lower(), b.lower()
    if a == b or not (_ADDRESS.fullmatch(a) and _ADDRESS.fullmatch(b)):
        return False
    return a[2:6] == b[2:6] and a[-4:] == b[-4:]


def lookalike_key(address: str) -> tuple[str, str]:
    """The part of an address that `is_lookalike` compares, for indexing known addresses."""
    address = address.lower()
    return address[2:6], address[-4:]


NATIVE_UNITS = {"wei": 0, "gwei": 9, "eth": 18, "ether": 18}
"""The native asset's units a user may write; anything else after a number is a token symbol."""

_AMOUNT_TEXT = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?) ?(?P<unit>[A-Za-z][A-Za-z0-9]{0,15})?")
_EXPONENT = re.compile(r"[0-9.]+[eE][+-]?[0-9]")
AMOUNT_EXAMPLE = "write the number and its unit, e.g. 0.001eth, 1000wei, 12gwei or 5usdc"


@dataclass(frozen=True)
class AmountText:
    """An amount as the user wrote it: an exact decimal and its unit (lowercase)."""

    number: str
    unit: str

    @property
    def native(self) -> bool:
        return self.unit in NATIVE_UNITS

    def native_wei(self) -> int:
        """The native amount in wei; refuses more decimals than the unit has."""
        return parse_units(self.number, NATIVE_UNITS[self.unit])

    def native_eth_text(self) -> str:
        """The native amount as an exact ETH decimal ("1000wei" -> "0.000000000000001")."""
        return format_amount(self.native_wei(), 18, "").strip()


def read_amount(text: str) -> AmountText:
    """The one amount grammar of every command: `NUMBER UNIT`, the unit always written.

    A bare number is refused rather than guessed: `0.001` meant ETH in chat and wei on the command
    line, and a silent wei (or a silent ETH) is how a user sends 10**18 times what they meant.
    """
    if not isinstance(text, str):
        raise ValueError(f"cannot read amount {text!r}: {AMOUNT_EXAMPLE}")
    stripped = text.strip()
    if _EXPONENT.match(stripped):
        raise ValueError(f"{stripped!r}: exponents are not accepted; {AMOUNT_EXAMPLE}")
    if stripped[:2].lower() == "0x":
        raise ValueError(f"{stripped!r}: hex amounts are not accepted; {AMOUNT_EXAMPLE}")
    match = _AMOUNT_TEXT.fullmatch(stripped) if len(stripped) <= _MAX_DIGITS else None
    if match is None:
        raise ValueError(f"cannot read amount {stripped!r}: {AMOUNT_EXAMPLE}")
    if match["unit"] is None:
        raise ValueError(
            f"{stripped!r} has no unit: {AMOUNT_EXAMPLE} (a bare number is never taken as wei or ETH)"
        )
    return AmountText(match["number"], match["unit"].lower())
