"""The companion web app's sources pass eslint, as CI runs it (eslint.config.mjs: the recommended rules, browser globals).

The web app has no type checker; the lint is what catches an undefined name, an unused variable or
an unreachable branch before a phone runs it. eslint is pinned in package.json and locked in
package-lock.json (installed by `bash .ci/setup`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = "companion_bridge/webapp/src"
ESLINT = ROOT / "node_modules" / ".bin" / "eslint"


def _eslint(cwd: Path, target: str) -> subprocess.CompletedProcess:
    assert ESLINT.exists(), "eslint is not installed: run `bash .ci/setup` (npm install)"
    return subprocess.run(
        [str(ESLINT), "--no-warn-ignored", "--max-warnings", "0", target],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_web_app_sources_pass_eslint() -> None:
    out = _eslint(ROOT, SOURCES)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:] + "\n(run `npm run lint:companion`)"


def test_a_file_eslint_rejects_is_caught(tmp_path: Path) -> None:
    """The same config over a copy with one bad module fails and names it: the check is not vacuous."""
    (tmp_path / "companion_bridge" / "webapp").mkdir(parents=True)
    shutil.copytree(ROOT / SOURCES, tmp_path / SOURCES)
    shutil.copy(ROOT / "eslint.config.mjs", tmp_path / "eslint.config.mjs")
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")
    (tmp_path / SOURCES / "probe.js").write_text(
        "export function probe(x) {\n  const unused = 1;\n  return x + undefinedName;\n}\n"
    )
    out = _eslint(tmp_path, SOURCES)
    assert out.returncode != 0
    assert "probe.js" in out.stdout
    assert "'unused' is assigned a value but never used" in out.stdout
    assert "'undefinedName' is not defined" in out.stdout
    assert "main.js" not in out.stdout  # the real sources in the copy stay clean
