"""The approval journal on disk: where it may live, and what a readable one looks like.

The journal is the only record of approvals a bridge may be holding, so a file or directory someone
else can change is refused rather than read (a group-writable directory lets another user delete
the journal, and every outstanding approval with it), and a file that does not parse into exactly
the fields an entry has is refused with a worded error instead of a traceback halfway through
`outstanding`. It is parsed with policies.kernel.safejson: the companion imports eth_account, which raises
the recursion limit far enough that deeply nested JSON would crash the process.
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from policies.kernel import safejson
from policies.kernel.addresses import is_address

VERSION = 1
_HASH = re.compile(r"0x[0-9a-fA-F]{64}")


class JournalError(Exception):
    """Worded for the user."""


def check_private_dir(home: Path) -> None:
    """The companion directory must be a real directory of this user's, 0700: nobody else may add,
    replace or delete the journal in it."""
    try:
        info = os.lstat(home)
    except OSError as exc:
        raise JournalError(f"the companion directory {home} cannot be read ({exc.strerror})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise JournalError(f"the companion directory {home} is not a directory (a symlink?)")
    if info.st_uid != os.getuid():
        raise JournalError(f"the companion directory {home} belongs to uid {info.st_uid}, not to you")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise JournalError(
            f"the companion directory {home} has mode {mode:04o}: others could delete the "
            f"approval journal. Run `chmod 700 {home}` and check the journal is still there"
        )


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _time(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _settled_by(value: Any) -> bool:
    return isinstance(value, dict) and _int(value.get("main_nonce_mined")) and _time(value.get("quote_ts"))


# field: (check, what it must be). Times are either clock's seconds; None means "not yet".
_CHECKS: dict[str, tuple[Any, str]] = {
    "request_id": (lambda v: isinstance(v, str) and 0 < len(v) <= 200, "a request id"),
    "chain_id": (_int, "a chain id"),
    "nonce": (_int, "a nonce"),
    "tx_hash": (lambda v: isinstance(v, str) and _HASH.fullmatch(v) is not None, "a transaction hash"),
    "to": (is_address, "an address"),
    "value": (
        lambda v: isinstance(v, str) and v.isascii() and v.isdigit() and len(v) <= 78,
        "an amount of wei",
    ),
    "summary": (lambda v: isinstance(v, str), "text"),
    "signed_at": (_time, "a time"),
    "reply": (lambda v: isinstance(v, str), "text"),
    "quoted_at": (lambda v: v is None or _time(v), "a time or null"),
    "seen_ts": (lambda v: v is None or _time(v), "a time or null"),
    "settled_at": (lambda v: v is None or _time(v), "a time or null"),
    "settled_by": (lambda v: v is None or _settled_by(v), "a mined nonce quote or null"),
    "confirmed": (_int, "a count"),
}
REQUIRED = ("request_id", "chain_id", "nonce", "tx_hash", "to", "value", "summary", "signed_at")


def parse(data: bytes, path: Path) -> list[dict[str, Any]]:
    """The entries in a journal file as checked keyword arguments for `Entry`, or JournalError."""

    def broken(why: str) -> JournalError:
        return JournalError(
            f"the approval journal {path} is unreadable ({why}): move it aside and check the "
            "main account's transactions yourself"
        )

    try:
        body = safejson.loads(data)
    except ValueError as exc:
        raise broken(type(exc).__name__) from None
    if not isinstance(body, dict) or body.get("v") != VERSION or not isinstance(body.get("entries"), list):
        raise broken("not a version 1 journal")
    entries = []
    for index, item in enumerate(body["entries"]):
        if not isinstance(item, dict) or not all(name in item for name in REQUIRED):
            raise broken(f"entry {index} is incomplete")
        fields = {name: item[name] for name in _CHECKS if name in item}
        if isinstance(fields.get("settled_by"), dict) and "main_nonce_mined" not in fields["settled_by"]:
            fields["settled_at"] = fields["settled_by"] = None  # settled by a mempool count: check again
        for name, value in fields.items():
            check, what = _CHECKS[name]
            if not check(value):
                raise broken(f"entry {index}: {name} is not {what}")
        settled_by = fields.get("settled_by")
        if (settled_by is None) != (fields.get("settled_at") is None):
            raise broken(f"entry {index}: settled_at and settled_by disagree")
        entries.append(fields)
    return entries
