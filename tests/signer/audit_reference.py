"""The audit scrub and canonical text exactly as they were written before the faster walk (ed0d5a6):
the oracle that tests/signer/test_audit_equivalence.py holds `signer.store.audit.prepare` to.

Kept verbatim on purpose (only the names are private to this module): records already in homes
were written by this code, so the new one must refuse, redact and serialize byte for byte alike."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from signer.store.audit import AuditSecretError

_HEX64 = re.compile(r"^(0x)?[0-9a-fA-F]{64}$")
_TOKEN = re.compile(r"owl_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")
_PUBLIC_HEX_KEYS = ("hash", "data", "salt", "topic", "idempotency_key")
_FREE_TEXT_KEYS = frozenset({"agent_reason_unverified", "reason", "note"})
_HEX64_ANYWHERE = re.compile(r"(0x)?[0-9a-fA-F]{64}")
_SHORTEST_SECRET = 4 + 12 + 1 + 20
_HEX_SECRET = 64


def _cannot_hold_secret(value: str) -> bool:
    return len(value) < _SHORTEST_SECRET or (len(value) < _HEX_SECRET and "owl_" not in value)


_LEAVES = (int, float, bool, type(None))


def scrub(value: Any, key: str = "") -> Any:
    if isinstance(value, str):
        return value if _cannot_hold_secret(value) else _scrub_text(value, key)
    if isinstance(value, dict):
        return _scrub_members(value, value.items(), dict, str)
    if isinstance(value, (list, tuple)):
        return _scrub_members(value, enumerate(value), list, lambda _: key)
    return value


def _scrub_members(
    container: Any, members: Any, copy: Callable[[Any], Any], key_of: Callable[[Any], str]
) -> Any:
    out = container
    for slot, v in members:
        kind = type(v)
        if kind is str:
            if len(v) < _SHORTEST_SECRET or (len(v) < _HEX_SECRET and "owl_" not in v):
                continue
            clean = _scrub_text(v, key_of(slot))
        elif kind in _LEAVES:
            continue
        elif kind is dict:
            clean = _scrub_members(v, v.items(), dict, str)
        else:
            clean = scrub(v, key_of(slot))
        if clean is not v and clean != v:
            if out is container:
                out = copy(container)
            out[slot] = clean
    return out


def _scrub_text(value: str, key: str) -> str:
    if key in _FREE_TEXT_KEYS:
        return _TOKEN.sub("[redacted token]", _HEX64_ANYWHERE.sub("[redacted hex]", value))
    if _TOKEN.search(value):
        raise AuditSecretError(f"audit field {key!r} holds a client token")
    if _HEX64.match(value) and not key.endswith(_PUBLIC_HEX_KEYS) and not value.isdigit():
        raise AuditSecretError(f"audit field {key!r} holds a 32-byte secret-shaped value")
    return value


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def prepared_text(body: dict[str, Any]) -> str:
    """What `prepare(kind, body).text` was."""
    return _CANONICAL.encode(scrub(body))
