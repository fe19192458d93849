"""The event loop an owlia process runs on: uvloop where it is installed, else asyncio's own.

The bot's side of a signing request is mostly round trips over the signer's socket, and uvloop
halves what each costs (bench/signer_bench.py, docs/benchmarks.md). The signer daemon prefers
asyncio's own loop (signer.serve): it answers one request at a time, where the loop's share did not
show in its latency, and the process that holds the keys then maps no libuv and 2 MB less.
`OWLIA_EVENT_LOOP=asyncio` or `=uvloop` overrides either default, e.g. to rule uvloop out while debugging.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
LOOP_ENV = "OWLIA_EVENT_LOOP"


def loop_name(prefer: str = "uvloop") -> str:
    """ "uvloop" or "asyncio": the loop `run(..., prefer=prefer)` will use."""
    wanted = os.environ.get(LOOP_ENV, "").strip().lower() or prefer
    if wanted == "asyncio":
        return "asyncio"
    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


def run(main: Coroutine[Any, Any, T], *, prefer: str = "uvloop") -> T:
    if loop_name(prefer) == "uvloop":
        import uvloop  # optional: not in the signer's set (pyproject.toml [bridge]); loop_name found it

        return uvloop.run(main)
    return asyncio.run(main)
