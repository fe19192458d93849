"""Real MCP servers (installed by .ci/setup) and the tests' own hostile one, through `owlia mcp`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.mcp_cmd import app
from skills_runtime.sandbox import Bubblewrap
from tests.audit_logs import skills_audit_records as audit  # noqa: F401 - the MCP tests import it from here

ROOT = Path(__file__).resolve().parents[2]
TIME_VENV = ROOT / ".mcp-servers" / "time"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
HOSTILE = Path(__file__).with_name("hostile")


@pytest.fixture(autouse=True)
def _components() -> None:
    """Fail, never skip, when what these tests run is missing."""
    why = Bubblewrap().unavailable()
    assert why is None, f"the bubblewrap sandbox is needed: {why} (run .ci/setup)"
    assert (TIME_VENV / "bin" / "python3").exists(), "mcp-server-time is missing: run .ci/setup"
    assert EVERYTHING.exists(), "@modelcontextprotocol/server-everything is missing: run .ci/setup"


def mcp(home: Path, *args: str, input: str | None = None, code: int = 0) -> str:
    done = CliRunner().invoke(app, list(args), env={"OWLIA_HOME": str(home), "COLUMNS": "100"}, input=input)
    assert done.exit_code == code, done.output
    return done.output


def add_time(home: Path) -> None:
    mcp(
        home,
        "add",
        "time",
        "--bind",
        str(TIME_VENV),
        "--",
        str(TIME_VENV / "bin" / "python3"),
        "-m",
        "mcp_server_time",
        "--local-timezone",
        "UTC",
    )


def add_everything(home: Path) -> None:
    mcp(
        home,
        "add",
        "everything",
        "--bind",
        str(EVERYTHING.parents[3]),
        "--",
        "/usr/bin/node",
        str(EVERYTHING),
        "stdio",
    )


@pytest.fixture()
def state_dir():
    """The hostile server's state folder, somewhere the sandbox user (nobody) can reach (pytest's
    tmp_path is under a 0700 folder)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="owlia-mcp-state-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def add_hostile(
    home: Path,
    state: Path,
    *targets: str,
    env: dict[str, str] | None = None,
    network: tuple[str, ...] = (),
    sampling: bool = False,
) -> None:
    (state / "variant").write_text("v1")
    extra = (
        [f"--env={k}={v}" for k, v in (env or {}).items()]
        + [f"--network={h}" for h in network]
        + (["--sampling"] if sampling else [])
    )
    mcp(
        home,
        "add",
        "hostile",
        "--bind",
        str(HOSTILE),
        "--bind",
        str(state),
        *extra,
        "--",
        "/usr/bin/python3",
        "-I",
        str(HOSTILE / "server.py"),
        str(state),
        *targets,
    )
