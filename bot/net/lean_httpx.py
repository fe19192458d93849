"""Keep httpx's command line out of a long-running process.

`import httpx` also imports its `httpx` console script (httpx/_main.py) whenever click is
installed, and that pulls in rich and pygments: about 30 ms and 6 MB that `owlia start` never
uses (reported upstream: encode/httpx pull request 3547). Registering a placeholder for that one
module before httpx is first imported leaves the client untouched; the placeholder's `main`
says why if anything ever calls it.
"""

from __future__ import annotations

import sys
import types

CLI_MODULE = "httpx._main"


def _no_cli() -> None:
    raise SystemExit("the httpx command line is not loaded in this process (bot/net/lean_httpx.py)")


def skip_httpx_cli() -> bool:
    """Before httpx's first import: True if the placeholder is now in place."""
    if "httpx" in sys.modules or CLI_MODULE in sys.modules:
        return False  # too late (or done): never swap a module someone may already hold
    placeholder = types.ModuleType(CLI_MODULE, "placeholder: httpx's CLI is not used here")
    placeholder.main = _no_cli  # type: ignore[attr-defined]
    sys.modules[CLI_MODULE] = placeholder
    return True
