"""The socket path's fast checks decide exactly as the definitions they replace.

Each piece here runs on every request or reply, so it avoids a regex or a second validation pass;
these properties pin it to the plain definition it stands for."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signer.wire.protocol import MAX_UINT256, _uint256

_DECIMAL = re.compile(r"[0-9]{1,78}")


def _uint256_by_regex(value: Any) -> int:
    """The definition: ints or 1-78 ASCII decimal digits, within 0..2**256-1; never floats or bools."""
    if isinstance(value, bool) or isinstance(value, float):
        raise ValueError("float or bool")
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value):
            raise ValueError("not decimal")
        value = int(value)
    if not isinstance(value, int):
        raise ValueError("not an integer")
    if not 0 <= value <= MAX_UINT256:
        raise ValueError("out of range")
    return value


def _outcome(fn: Any, value: Any) -> Any:
    try:
        return ("ok", fn(value))
    except ValueError:
        return ("refused",)


_DIGITS = "0123456789"
_TRICKY = "٠١٢³²¹①𝟘𝟙０１\n \t+-_.eE"  # other scripts' digits, superscripts, full-width, signs, separators

amounts = st.one_of(
    st.text(alphabet=_DIGITS, max_size=90),
    st.text(alphabet=_DIGITS + _TRICKY, max_size=82),
    st.text(max_size=20),
    st.integers(min_value=-(2**260), max_value=2**260),
    st.sampled_from([MAX_UINT256, MAX_UINT256 + 1, str(MAX_UINT256), str(MAX_UINT256 + 1), "9" * 78, "0" * 78,
                     "0" * 79, "", True, False, 1.0, float("nan"), None, b"1", [1]]),
    st.floats(),
)


@settings(max_examples=3000, deadline=None)
@given(value=amounts)
def test_uint256_accepts_and_refuses_exactly_what_the_regex_definition_does(value: Any) -> None:
    assert _outcome(_uint256, value) == _outcome(_uint256_by_regex, value)


@pytest.mark.parametrize("value", ["١٢٣", "１２", "²", "12\n", " 12", "+1", "1_000", "1e3", "0" * 79])
def test_uint256_refuses_strings_that_only_look_decimal(value: str) -> None:
    with pytest.raises(ValueError):
        _uint256(value)
