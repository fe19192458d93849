"""Installed skills: `<home>/skills/<name>/` copies and a 0600 registry that pins each one.

The registry records the tree hash and the permissions the user approved. Every load re-hashes the
folder and re-reads SKILL.md; a skill whose files or permissions changed is refused until the user
approves it again (`owlia skill approve`). Only the CLI writes here: no tool the agent can call
installs, enables or approves anything.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.kernel.files import ensure_private_dir
from policies.kernel.locks import locked_beside
from policies.kernel.registry import RegistryCorrupt, read_registry, write_registry
from skills_runtime.manifest import SkillManifest, load_manifest, tool_name
from skills_runtime.tree import copy_tree, extract_archive, tree_hash

REGISTRY = "registry.json"


class SkillError(Exception):
    """A skill cannot be installed, found or loaded; the message is safe to show."""


class SkillChanged(SkillError):
    """The files or permissions differ from what the user approved."""


@dataclass(frozen=True)
class Prepared:
    """A candidate copied into the store's staging area, not yet installed."""

    folder: Path
    manifest: SkillManifest
    tree_hash: str
    previous: dict[str, Any] | None


@dataclass(frozen=True)
class InstalledSkill:
    name: str
    folder: Path
    manifest: SkillManifest
    tree_hash: str
    enabled: bool


class SkillStore:
    def __init__(self, home: Path) -> None:
        self.root = Path(home) / "skills"
        self.registry_path = self.root / REGISTRY

    # ---- registry -----------------------------------------------------------------------------

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            return read_registry(self.registry_path, "skills")
        except RegistryCorrupt as exc:
            raise SkillError(
                f"{self.registry_path} is corrupt; refusing to load any skill ({exc}). "
                "Nothing was changed: fix it by hand or restore it from a backup"
            ) from exc

    def _write(self, skills: dict[str, dict[str, Any]]) -> None:
        write_registry(self.registry_path, "skills", skills)

    def entries(self) -> dict[str, dict[str, Any]]:
        return self._read()

    def entry(self, name: str) -> dict[str, Any]:
        found = self._read().get(name)
        if found is None:
            raise SkillError(f"no skill named {name!r} is installed")
        return found

    def check_names(self, manifest: SkillManifest) -> None:
        """Refuse a skill whose `skill_<skill>_<tool>` names another installed skill already has
        (the bot could offer only one of them, and the model would call the wrong one)."""
        taken = {
            tool_name(name, tool): name
            for name, entry in self._read().items()
            if name != manifest.name
            for tool in entry.get("permissions", {}).get("tools", {})
        }
        clash = next((n for n in manifest.tool_names() if n in taken), None)
        if clash is not None:
            raise SkillError(
                f"{manifest.name}: its tool {clash} has the name of a tool of the installed skill "
                f"{taken[clash]}; rename the tool or remove {taken[clash]} first"
            )

    # ---- install ------------------------------------------------------------------------------

    def prepare(self, source: Path) -> Prepared:
        """Copy (or extract) `source` into staging and read it; nothing is installed yet."""
        source = Path(source)
        staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=ensure_private_dir(self.root)))
        folder = staging / "tree"
        try:
            if source.is_dir():
                copy_tree(source, folder)
            elif source.is_file():
                extract_archive(source, folder)
            else:
                raise SkillError(f"{source} is neither a folder nor an archive")
            manifest = load_manifest(folder)
            self.check_names(manifest)
            digest = tree_hash(folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return Prepared(folder, manifest, digest, self._read().get(manifest.name))

    def discard(self, prepared: Prepared) -> None:
        shutil.rmtree(prepared.folder.parent, ignore_errors=True)

    def install(self, prepared: Prepared, *, enabled: bool = True) -> InstalledSkill:
        """Move the approved candidate into place (replacing an older version) and pin it."""
        name = prepared.manifest.name
        target = self.root / name
        old = self.root / f".old-{name}-{int(time.time() * 1000)}"
        if target.exists():
            target.rename(old)
        prepared.folder.rename(target)
        self.discard(prepared)
        shutil.rmtree(old, ignore_errors=True)
        with locked_beside(self.registry_path):
            skills = self._read()
            now = int(time.time())
            skills[name] = {
                "version": prepared.manifest.version,
                "tree_hash": prepared.tree_hash,
                "enabled": enabled,
                "permissions": prepared.manifest.permissions(),
                "installed_at": now,
                "approved_at": now,
            }
            self._write(skills)
        return InstalledSkill(name, target, prepared.manifest, prepared.tree_hash, enabled)

    # ---- life cycle ---------------------------------------------------------------------------

    def set_enabled(self, name: str, enabled: bool) -> None:
        with locked_beside(self.registry_path):
            skills = self._read()
            if name not in skills:
                raise SkillError(f"no skill named {name!r} is installed")
            skills[name]["enabled"] = enabled
            self._write(skills)

    def remove(self, name: str) -> None:
        with locked_beside(self.registry_path):
            skills = self._read()
            if name not in skills:
                raise SkillError(f"no skill named {name!r} is installed")
            del skills[name]
            self._write(skills)
        shutil.rmtree(self.root / name, ignore_errors=True)

    def current(self, name: str) -> tuple[SkillManifest, str]:
        """The manifest and hash of the folder as it is on disk now (for `approve` and `info`)."""
        self.entry(name)
        folder = self.root / name
        return load_manifest(folder), tree_hash(folder)

    def approve(self, name: str, expected_hash: str) -> None:
        """Re-pin a changed skill to the hash the user was shown (not whatever is there by now)."""
        manifest, digest = self.current(name)
        if digest != expected_hash:
            raise SkillChanged(f"{name} changed again while you were reviewing it; run approve again")
        self.check_names(manifest)
        with locked_beside(self.registry_path):
            skills = self._read()
            if name not in skills:
                raise SkillError(f"no skill named {name!r} is installed")
            skills[name].update(
                version=manifest.version,
                tree_hash=digest,
                permissions=manifest.permissions(),
                approved_at=int(time.time()),
            )
            self._write(skills)

    def load(self, name: str) -> InstalledSkill:
        """The skill exactly as approved, or SkillChanged (re-hashed and re-read on every load)."""
        entry = self.entry(name)
        folder = self.root / name
        try:
            manifest, digest = self.current(name)
        except (OSError, ValueError) as exc:
            raise SkillChanged(f"{name}: cannot be read as approved ({exc})") from None
        if digest != entry["tree_hash"]:
            raise SkillChanged(
                f"{name}: its files changed since you approved it; review with `owlia skill approve {name}`"
            )
        if manifest.name != name or manifest.permissions() != entry["permissions"]:
            raise SkillChanged(
                f"{name}: its declared permissions changed; review with `owlia skill approve {name}`"
            )
        return InstalledSkill(name, folder, manifest, digest, bool(entry["enabled"]))

    def enabled(self) -> list[str]:
        return sorted(name for name, entry in self._read().items() if entry.get("enabled"))
