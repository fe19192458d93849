"""Ethereum addresses: one pattern and one EIP-55 implementation for every process.

EIP-55 hides a checksum in the case of the hex letters (a letter is upper case when the matching
nibble of keccak(lowercase hex) is 8 or more), so a mistyped mixed-case address is caught; an
all-lowercase or all-uppercase address carries no checksum and is accepted as written.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, TypeGuard

from policies.kernel.keccak import keccak256

ADDRESS_PATTERN = r"^0x[0-9a-fA-F]{40}$"  # for pydantic Field(pattern=...) and JSON schemas
ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]{40}")  # use with fullmatch


def is_address(value: Any) -> TypeGuard[str]:
    """0x followed by exactly 40 hex digits (says nothing about the checksum)."""
    return isinstance(value, str) and ADDRESS_RE.fullmatch(value) is not None


def to_checksum(address: str) -> str:
    """The EIP-55 form of a 0x address, so the user can compare it with what their wallet shows."""
    body = address[2:].lower()
    return _checksummed(body) if len(body) == 40 else _checksum(body)


# The same few addresses (the session key, the address book) come back on every request; the key's
# length is fixed, so the cache is bounded in bytes as well as in entries.
@lru_cache(maxsize=1024)
def _checksummed(body: str) -> str:
    return _checksum(body)


def _checksum(body: str) -> str:
    digest = keccak256(body.encode()).hex()
    return "0x" + "".join(c.upper() if c.isalpha() and int(h, 16) >= 8 else c for c, h in zip(body, digest))


def checksum_ok(address: str) -> bool:
    """True if every hex letter has the case EIP-55 gives it (False for an all-lowercase address with letters)."""
    return address[2:] == to_checksum(address)[2:]


def case_ok(address: str) -> bool:
    """All lowercase, all uppercase (no checksum), or mixed case that is a valid EIP-55 checksum."""
    body = address[2:]
    return body == body.lower() or body == body.upper() or checksum_ok(address)
