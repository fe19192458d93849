"""The daemon's idle memory stays bounded: what only rare methods need is not loaded at rest, and
no pydantic plugin (third-party code) is ever loaded into the signer.

Sizes, not times: a real `owlia signer serve` (passphrase file, so the lean `signer.serve` program)
is measured once it serves. It measures 47.3 MB here, and 49.3 MB in a venv whose files were written
minutes before, as CI's are (the page cache's state, not the code: docs/benchmarks.md). The ceiling
leaves about 4.7 MB above that for a different libc or wheel build, and fails when a subsystem's
worth of imports comes back at rest (the cuts below were 0.5-2 MB each; typer and click were 1.2 MB)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

IDLE_RSS_CEILING_KB = 54 * 1024
# Loaded on first use only: Tier 3 (a chain with delegation contracts, or the tier3.grant method);
# cryptography's key-serialization package (the identity key's raw bytes need none of it); the
# HTTP client (first RPC call); pydantic's plugin loader and the importlib.metadata / email /
# zipfile / tempfile it pulls in (never: signer.serve stands in a loader that finds no plugins);
# argparse (with shutil): the daemon reads two options; uvloop: the
# daemon runs on asyncio's own loop (signer.serve.DAEMON_LOOP).
LAZY = (
    "signer.tier3.grants",
    "signer.wire.delegation",
    "signer.wire.grants",
    "cryptography.hazmat.primitives.serialization",
    "http.client",
    "email",
    "importlib.metadata",
    "zipfile",
    "tempfile",
    "argparse",
    "shutil",
    "uvloop",
)
PROBE = (
    "import sys, json, signer.serve\n"
    "signer.serve.load_no_pydantic_plugins()  # as signer.serve.main does first\n"
    "import signer.daemon, signer.server, signer.methods\n"
    "from policies.loader import parse_policy\n"
    "parse_policy(open('policies/defaults/dev.yaml').read())  # models built, as at start\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


def test_the_serving_daemon_stays_under_its_idle_ceiling(stack):
    assert stack.process is not None
    assert stack.call_sync(stack.admin_token, "status")["unlocked"] is True
    rss = _status_kb(stack.process.pid, "VmRSS")
    maps = Path(f"/proc/{stack.process.pid}/maps").read_text()
    assert "_pydantic_core" in maps and "libsecp256k1" in maps  # measured the daemon, not a stand-in
    assert "uvloop" not in maps  # asyncio's own loop (signer.serve.DAEMON_LOOP): no libuv beside the keys
    assert 10 * 1024 < rss <= IDLE_RSS_CEILING_KB, f"signer idle RSS {rss / 1024:.1f} MB"
    stack.stop()


def test_the_daemon_program_leaves_rare_parts_unloaded():
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=root)
    loaded = json.loads(out.stdout)
    assert (
        "signer.daemon" in loaded and "signer.engine" in loaded and "policies.model" in loaded
    )  # it did import
    assert [m for m in loaded if m in LAZY or m.startswith(tuple(f"{p}." for p in LAZY))] == []


def _plugin_package(directory: Path, marker: Path) -> None:
    """An installed distribution that names a pydantic plugin in its entry points: importing it
    leaves a marker, as real code reaching into every validated value would run."""
    (directory / "evil_plugin.py").write_text(
        f"open({str(marker)!r}, 'w').write('loaded')\n"
        "class Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None  # would see every value validated\n"
        "plugin = Plugin()\n"
    )
    info = directory / "evil_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nevil = evil_plugin:plugin\n")


def test_a_pydantic_plugin_installed_beside_the_signer_never_loads_into_it(tmp_path):
    """Attack: a package in the signer's environment registers a pydantic plugin, and the variable
    that turns plugins off is not set (or set to load them). The daemon program builds its models
    (config, policy) without loading it; the same environment does load it into a plain process,
    so the plugin is real."""
    plugins, marker = tmp_path / "site", tmp_path / "marker"
    plugins.mkdir()
    _plugin_package(plugins, marker)
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(plugins), env.get("PYTHONPATH", "")])
    root = Path(__file__).resolve().parents[2]
    control = subprocess.run(
        [sys.executable, "-c", "import pydantic\nclass M(pydantic.BaseModel):\n    x: int\n"],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert control.returncode == 0 and marker.read_text() == "loaded", control.stderr
    marker.unlink()
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {"chains": [{"id": 31337, "name": "anvil", "rpc_url": "http://127.0.0.1:9", "dev": True}]}
        )
    )
    for setting in (None, "evil-but-not-this-one"):
        run_env = env if setting is None else {**env, "PYDANTIC_DISABLE_PLUGINS": setting}
        out = subprocess.run(
            [sys.executable, "-m", "signer.serve", "--home", str(home)],
            env=run_env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        # It read and validated the config (models built), then stopped: there is no keystore.
        assert out.returncode == 1 and "owlia signer init" in out.stderr, out.stderr
        assert not marker.exists()
