"""Keep pydantic's plugin loader, and the package-metadata reader it imports, out of our processes.

pydantic loads plugins from every installed package's entry points when it builds its first model:
code any installed package can name, which then sees every value validated. OwliaBot uses none.
`PYDANTIC_DISABLE_PLUGINS` turns them off, but pydantic still imports its loader
(`pydantic.plugin._loader`), and that imports `importlib.metadata` at its top, with email, zipfile,
csv, tempfile and shutil, for a `get_plugins()` that answers `()`. Measured without the stand-in
(plugins still off): `owlia sign send` took 13 ms more (124 -> 138 ms wall median, 121 -> 134 ms CPU;
bench/cli_bench.py, 20 pairs on a quiet machine; 12-15 ms more CPU in 3 runs of 15 under load);
`owlia --help` builds no model; `owlia start` to ready moved less than the noise (bench/agent_bench.py
--starts 5, 3 runs each) and held 0.9 MB more once idle. A stand-in loader that finds no plugins takes
its place. It is installed only before the real one is imported: a module someone may already hold is never swapped.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from typing import Any

ENV = "PYDANTIC_DISABLE_PLUGINS"
LOADER = "pydantic.plugin._loader"
ALL_DISABLED = ("__all__", "1", "true")  # what pydantic's own get_plugins reads as "no plugin at all"


def _no_plugins() -> Iterable[Any]:
    return ()


def stand_in_loader(*, whatever_the_environment_says: bool = False) -> bool:
    """Before pydantic builds its first model: True if the stand-in is now in place.

    By default only when the environment disables every plugin (a user's list of plugins to leave out
    keeps the real loader); the signer passes `whatever_the_environment_says=True`: no plugin runs
    there, whatever a caller's environment names."""
    if LOADER in sys.modules:
        return False  # too late (or done)
    if not whatever_the_environment_says and os.environ.get(ENV) not in ALL_DISABLED:
        return False
    stand_in = types.ModuleType(LOADER, "stand-in: pydantic plugins are disabled in this process")
    stand_in.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[LOADER] = stand_in
    return True


def plugins_off(*, whatever_the_environment_says: bool = False) -> None:
    """Before the first model is built: plugins off unless the environment already says otherwise
    (a value set there is kept), and the stand-in loader in place (`stand_in_loader`)."""
    os.environ.setdefault(ENV, "__all__")
    stand_in_loader(whatever_the_environment_says=whatever_the_environment_says)
