"""`owlia`'s command line reaches into three private modules of typer (its vendored click, its
parameter coercion, its path type): pinned exactly, and this test fails on any other version, so an
upgrade is a deliberate act that re-checks them, never a silent break of the CLI."""

from __future__ import annotations

import importlib
import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = {  # module: the names bot/cli uses from it
    "typer._click": ("Command", "Context", "HelpFormatter"),
    "typer._click.exceptions": ("BadParameter",),
    "typer._click.utils": ("PacifyFlushWrapper",),
    "typer._coercion": ("RuntimeParam", "build_runtime_param"),
    "typer._param_types": ("coerce_cli_path",),
}


def _typer_requirement() -> Requirement:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (typer,) = [Requirement(d) for d in dependencies if Requirement(d).name == "typer"]
    return typer


def test_typer_is_pinned_to_one_version_and_that_version_is_installed():
    specifier = _typer_requirement().specifier
    (only,) = list(specifier)
    assert only.operator == "==", "typer must be pinned exactly while bot/cli uses its private modules"
    assert importlib.metadata.version("typer") == only.version


def test_the_private_names_the_cli_uses_exist_in_the_pinned_typer():
    for module, names in PRIVATE.items():
        loaded = importlib.import_module(module)
        missing = [name for name in names if not hasattr(loaded, name)]
        assert not missing, f"{module} lacks {missing}: re-check bot/cli before moving typer's pin"


def test_every_private_typer_import_in_the_cli_is_listed_here():
    used = set()
    for path in (ROOT / "bot" / "cli").glob("*.py"):
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("from", "import") and words[1].startswith("typer._"):
                used.add(words[1])
    assert used and used <= set(PRIVATE), used - set(PRIVATE)
