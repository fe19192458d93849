"""How the `owlia` process itself ends a one-shot command: without Python's teardown.

`owlia sign send` sends a request, prints the answer and exits; after the answer, Python would
spend about a fifth of the command clearing every module and collecting the heap pydantic, asyncio
and the wire models built (measured in docs/benchmarks.md). A mount marked `one_shot` (and the
typer-free `sign send`, bot/cli/entry.py) writes no file and leaves no thread, so the `owlia`
process (`run`, from `bot.cli.entry.main`; never a test's CliRunner) runs it with the cyclic
garbage collector off (the process lives well under a second) and ends with `os._exit` once
stdout and stderr are flushed and the atexit handlers have run. The exit code is the command's.
Any other command, a message as the exit value, a failed flush or a thread still running takes
Python's ordinary exit. `prepare` runs before any command: no pydantic plugins.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from policies.kernel.pydantic_plugins import plugins_off


def prepare() -> None:
    """Before any command runs: no pydantic plugins unless the environment names some.

    pydantic loads plugins from every installed package's entry points when it builds its first
    model: it reads the metadata of all of them (about 15 ms of `owlia sign send`), and would run code
    from any package that names itself a plugin inside every command, the signer's included (its
    processes inherit the setting). OwliaBot uses none (policies/kernel/pydantic_plugins.py)."""
    plugins_off()


class _State:
    standalone = False  # inside `run`: the `owlia` process itself
    other_loaded = False  # a command not marked one_shot was loaded


def loading(*, one_shot: bool) -> None:
    """A mounted command is about to load."""
    if not _State.standalone:
        return
    if one_shot and not _State.other_loaded:
        gc.disable()
    else:
        _State.other_loaded = True
        gc.enable()


def run(main: Callable[[], Any]) -> None:
    _State.standalone = True
    try:
        main()
    except SystemExit as done:
        code = done.code
        if _State.other_loaded or not (code is None or isinstance(code, int)) or threading.active_count() > 1:
            raise
        try:
            _flush()
        except (OSError, ValueError):
            raise done from None  # Python's own exit reports it
        atexit._run_exitfuncs()
        try:
            _flush()
        finally:
            os._exit(code or 0)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None: the process was started with that descriptor closed
            stream.flush()
