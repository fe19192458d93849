"""JSON from a peer we do not trust, refused before parsing when it nests too deeply.

CPython's C JSON decoder recurses once per `[` or `{`, guarded only by the interpreter's recursion
limit. Importing eth_account (through py_ecc) raises that limit to 100 000, and then a line of a
few hundred thousand brackets overflows the C stack: the process dies with SIGSEGV instead of
raising RecursionError. Any process that parses a hostile peer's JSON (a skill, a signer client, an
RPC node, a companion, an LLM's tool arguments) therefore checks the nesting first, in linear time.

Bytes are decoded as strict UTF-8 first and the scan and the parser then read the same text:
`json.loads(bytes)` would also accept UTF-16 and UTF-32, where a byte 0x22 inside a character
looks like a quote to a byte scan and hides the brackets after it.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
"""Far beyond any message of ours (a sign request nests 4 levels), far below a stack overflow."""

# A whole JSON string, a bracket, or a quote that opens a string never closed (everything after it
# is inside that string, so the parser nests no further; stopping there keeps the scan linear).
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]|"', re.DOTALL)


class TooDeep(ValueError):
    """The JSON nests deeper than allowed; a ValueError, like any other JSON that is refused."""


def too_deep(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """Do `[` and `{` outside strings nest deeper than `max_depth`?"""
    if text.count("[") + text.count("{") <= max_depth:  # the usual case: no scan at all
        return False
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if len(token) != 1:
            continue  # a string: brackets inside it do not nest
        if token in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif token == '"':
            return False  # the rest is one unclosed string: the depth so far was within the limit
        else:
            depth -= 1
    return False


class NotJson(ValueError):
    """Text Python's parser accepts but RFC 8259 JSON does not: NaN, Infinity, a lone surrogate."""


def _no_constants(name: str) -> Any:
    raise NotJson(f"{name} is not a JSON number")


_STRICT = json.JSONDecoder(parse_constant=_no_constants)

# A \u escape of a surrogate; only then can the parsed text hold a lone one (strict UTF-8 cannot).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def loads(
    data: bytes | bytearray | str, max_depth: int = MAX_DEPTH, *, strict: bool = False, **options: Any
) -> Any:
    """`json.loads(data, **options)` for UTF-8 (bytes) or text; TooDeep (a ValueError) for JSON nested
    deeper than `max_depth`, UnicodeDecodeError (also a ValueError) for bytes that are not UTF-8.

    `strict=True` also refuses, with NotJson, what RFC 8259 does not allow and Python accepts:
    NaN / Infinity / -Infinity, and a string holding a lone surrogate (no UTF-8 encoder, and so no
    reply that echoes it, can write one back).
    """
    text = data if isinstance(data, str) else bytes(data).decode("utf-8")
    if too_deep(text, max_depth):
        raise TooDeep(f"JSON nested deeper than {max_depth} levels")
    if not strict:
        return json.loads(text, **options)
    # One decoder for the usual call (the signer's every request frame): json.loads with options builds a new one each time.
    value = _STRICT.decode(text) if not options else json.loads(text, parse_constant=_no_constants, **options)
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise NotJson("a string holds a lone UTF-16 surrogate, which is not Unicode text")
    return value
