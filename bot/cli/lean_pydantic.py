"""Keep pydantic's plugin loader (and the package metadata reader it imports) out of `owlia`.

`bot.cli.app.main` disables pydantic plugins (PYDANTIC_DISABLE_PLUGINS=__all__): OwliaBot uses
none. pydantic still imports its loader, `pydantic.plugin._loader`, when it builds its first model,
and that module imports `importlib.metadata` at its top (with email, zipfile, csv and the
importlib.resources machinery): about 5 ms of `owlia start` and of `owlia sign send`, for a
`get_plugins()` that answers `()` whenever plugins are disabled. Registering a placeholder whose
`get_plugins` answers `()` before the first model is built skips that import and changes nothing
else. Only when plugins are disabled by a value pydantic itself reads as "all" (a list of plugin
names keeps the real loader), and never once the loader is loaded.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from typing import Any

LOADER = "pydantic.plugin._loader"
ALL_DISABLED = ("__all__", "1", "true")  # what pydantic's own get_plugins reads as "no plugin at all"


def _no_plugins() -> Iterable[Any]:
    return ()


def skip_plugin_loader() -> bool:
    """Before pydantic builds its first model: True if the placeholder is now in place."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ALL_DISABLED or LOADER in sys.modules:
        return False  # plugins wanted, or too late: never swap a module someone may already hold
    placeholder = types.ModuleType(LOADER, "placeholder: pydantic plugins are disabled in this process")
    placeholder.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[LOADER] = placeholder
    return True
