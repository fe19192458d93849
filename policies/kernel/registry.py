"""A registry of named entries in one private JSON file: `{"version": 1, "<section>": {name: entry}}`.

The skills' and the MCP servers' registries are written by the CLI and read by the bot. A write
replaces the whole file (`write_private_file`: 0600 temp file, fsync, rename, fsync of the 0700
directory), so a reader sees the old registry or the new one, never half of either. Writers hold
the registry's lock (`policies.kernel.locks.locked_beside`) from their read to their write: two `owlia` commands at once would otherwise each
write back the registry they read, and one's edit (a disable, a removal) would silently come undone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from policies.kernel.files import ensure_private_dir, write_private_file

VERSION = 1


class RegistryCorrupt(ValueError):
    """The file is not a JSON object whose section is an object; the message names the file."""


def read_registry(path: Path, section: str) -> dict[str, Any]:
    """The entries of `section`, or {} when the file does not exist."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError as exc:  # not JSON, or not UTF-8
        raise RegistryCorrupt(f"{path} is not JSON") from exc
    if isinstance(data, dict) and data.get("version") != VERSION:  # another format: never read it as empty
        raise RegistryCorrupt(f"{path} has version {data.get('version')!r}, not {VERSION}")
    entries = data.get(section, {}) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise RegistryCorrupt(f"{path} has no {section!r} object")
    return entries


def write_registry(path: Path, section: str, entries: Mapping[str, Any]) -> None:
    """Replace the registry with `entries` (keys sorted), creating its directory 0700 if needed."""
    path = Path(path)
    ensure_private_dir(path.parent)
    body = json.dumps({"version": VERSION, section: dict(entries)}, indent=2, sort_keys=True).encode()
    write_private_file(path, body)
