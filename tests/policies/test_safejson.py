"""Deeply nested JSON from a hostile peer is refused before the C decoder can overflow the stack."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from hypothesis import given, strategies as st

from bot.llm.types import parse_tool_arguments
from policies.kernel.safejson import MAX_DEPTH, TooDeep, loads, too_deep

_leaves = st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:')
_values = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=40,
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@given(_values, st.integers(min_value=0, max_value=12))
def test_the_scan_measures_the_real_nesting_whatever_the_strings_hold(value, limit):
    text = json.dumps(value)
    assert too_deep(text, limit) == (_depth(value) > limit)
    if _depth(value) <= MAX_DEPTH:
        assert loads(text.encode()) == json.loads(text)


def test_within_the_limit_it_is_plain_json_loads():
    nested = json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) == nested
    assert loads(b'{"a": "[[[[", "b": [1, {"c": 2}]}') == {"a": "[[[[", "b": [1, {"c": 2}]}
    with pytest.raises(TooDeep, match="deeper than 64"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert issubclass(TooDeep, ValueError)  # every caller's `except ValueError` already handles it


def test_the_scan_stays_linear_on_hostile_input():
    hostile = ["[" * 2_000_000, "[" * 100 + '"\\"' * 700_000, '[{"' * 700_000, '"' + "[" * 2_000_000]
    for line in hostile:
        started = time.perf_counter()
        too_deep(line)
        assert time.perf_counter() - started < 0.5, line[:20]


@pytest.mark.parametrize("encoding", ["utf-16-be", "utf-16-le", "utf-32-be", "utf-32-le"])
def test_json_in_another_encoding_cannot_hide_its_brackets(encoding):
    """json.loads(bytes) would read UTF-16 and UTF-32 too, where the byte 0x22 inside U+2241 looks
    like a quote to a scan of the bytes and hides every bracket after it. Only UTF-8 is read."""
    line = ('["\u2241",' + "[" * 100_000 + "]" * 100_000 + "]").encode(encoding)
    with pytest.raises(ValueError):
        loads(line)


def test_the_crash_it_prevents_is_real():
    """With eth_account imported (py_ecc raises the recursion limit to 100 000), the stdlib decoder
    kills the process with SIGSEGV on a nesting bomb; safejson refuses the same line."""
    script = (
        "import sys, json, eth_account\nassert sys.getrecursionlimit() >= 100000\n"
        "from policies.kernel.safejson import loads, TooDeep\nbomb = '[' * 300000\n"
        "try:\n    loads(bomb)\nexcept TooDeep:\n    print('refused', flush=True)\n"
        "json.loads(bomb)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout == "refused\n"
    assert done.returncode == -11  # SIGSEGV: what every untrusted parser in the project used to risk


def test_a_model_that_nests_its_tool_arguments_too_deeply_gets_an_error_not_a_crash():
    arguments, error = parse_tool_arguments('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert arguments == {} and error is not None and "deeper than" in error
