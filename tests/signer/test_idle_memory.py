"""The daemon's idle memory stays bounded: what only rare methods need is not loaded at rest.

Sizes, not times: a real `owlia signer serve` (passphrase file, so the lean `signer.serve` program)
is measured once it serves. The ceiling has headroom over the figure in docs/benchmarks.md (about
57 MB on the reference machine) so that a different libc or wheel build does not fail it, while a
newly eager import of a heavy package (a web framework, an SDK, several MB of models) does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

IDLE_RSS_CEILING_KB = 64 * 1024
# Loaded on first use only: Tier 3 (a chain with delegation contracts, or the tier3.grant method) and
# cryptography's key-serialization package (the identity key's raw bytes need none of it).
LAZY = ("signer.tier3", "signer.wire.delegation", "signer.wire.grants", "cryptography.hazmat.primitives.serialization")


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


def test_the_serving_daemon_stays_under_its_idle_ceiling(stack):
    assert stack.process is not None
    assert stack.call_sync(stack.admin_token, "status")["unlocked"] is True
    rss = _status_kb(stack.process.pid, "VmRSS")
    assert 10 * 1024 < rss <= IDLE_RSS_CEILING_KB, f"signer idle RSS {rss / 1024:.1f} MB"
    maps = Path(f"/proc/{stack.process.pid}/maps").read_text()
    assert "_pydantic_core" in maps and "libsecp256k1" in maps  # measured the daemon, not a stand-in
    stack.stop()


def test_the_daemon_program_leaves_rare_parts_unloaded():
    code = ("import sys, json, signer.serve, signer.daemon, signer.server, signer.methods\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert "signer.daemon" in loaded and "signer.engine" in loaded  # the probe did import the daemon
    assert [m for m in loaded if m in LAZY or m.startswith(tuple(f"{p}." for p in LAZY))] == []
