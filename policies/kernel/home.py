"""Where the OwliaBot home is: one rule for every process and command."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = Path("~/.owliabot")


def resolve_home(home: str | Path | None = None) -> Path:
    """`--home` beats `OWLIA_HOME` beats `~/.owliabot`."""
    chosen = home or os.environ.get("OWLIA_HOME") or DEFAULT_HOME
    return Path(chosen).expanduser().resolve()
