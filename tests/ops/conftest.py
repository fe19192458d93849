"""Homes for the audit and doctor: made by the real `owlia init` and the real signer init."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from bot.cli import init_cmd
from bot.ops.context import OpsContext


def run_init(home: Path) -> None:
    app = typer.Typer()
    app.command()(init_cmd.init)
    result = CliRunner().invoke(app, [], env={"OWLIA_HOME": str(home)})
    assert result.exit_code == 0, result.output


def set_config(home: Path, **sections: object) -> None:
    """Merge sections into config.yaml (keeping its 0600 mode)."""
    path = home / "config.yaml"
    data = yaml.safe_load(path.read_text()) or {}
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data))


def context(home: Path, **kwargs: object) -> OpsContext:
    kwargs.setdefault("env", {})
    return OpsContext.load(home, **kwargs)


@pytest.fixture()
def open_root():
    """A directory every uid can traverse (pytest's tmp_path is 0700, which would hide everything)."""
    root = Path(tempfile.mkdtemp(prefix="owlia-ops-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    run_init(path)
    return path


requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as other uids")
