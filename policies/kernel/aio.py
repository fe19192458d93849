"""The event loop every owlia process runs on: uvloop where it is installed, else asyncio's own.

A signing request is mostly round trips over the signer's socket, and uvloop halves what each
costs (bench/signer_bench.py, docs/benchmarks.md). `OWLIA_EVENT_LOOP=asyncio` forces the standard
loop, e.g. to rule uvloop out while debugging.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
LOOP_ENV = "OWLIA_EVENT_LOOP"


def loop_name() -> str:
    """"uvloop" or "asyncio": the loop `run` will use."""
    if os.environ.get(LOOP_ENV, "").strip().lower() == "asyncio":
        return "asyncio"
    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


def run(main: Coroutine[Any, Any, T]) -> T:
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
