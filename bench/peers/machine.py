"""Facts about the measuring machine and how busy other work keeps it. On 2 cores a number means little
without the load next to it, so this module waits for a quiet machine before each timed phase, records the
busy fraction from /proc/stat, and describes the hardware and tool versions for the result's `machine` block.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from installs import node_bin_dir
from procs import log

QUIET = {"max_wait": 0.0, "threshold": 0.15}


def cpu_busy(interval: float = 1.0) -> float:
    """Fraction of all CPUs busy (not idle/iowait) over `interval`, from /proc/stat. Called while no
    peer of ours runs, it measures what OTHER work on the machine is doing."""

    def snap() -> tuple[int, int]:
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:]]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
        return sum(vals[:8]), idle

    t1, i1 = snap()
    time.sleep(interval)
    t2, i2 = snap()
    return round(1 - (i2 - i1) / max(1, t2 - t1), 3)


def wait_quiet(label: str, max_wait: float | None = None) -> dict[str, Any]:
    """Wait (up to QUIET['max_wait'] s, or `max_wait` if smaller) until the machine is nearly idle;
    report the busy fraction."""
    t0 = time.time()
    limit = QUIET["max_wait"] if max_wait is None else min(max_wait, QUIET["max_wait"])
    busy = cpu_busy()
    while busy > QUIET["threshold"] and time.time() - t0 < limit:
        log(f"{label}: machine busy ({busy:.0%} of all CPUs by other work); waiting")
        time.sleep(4)
        busy = cpu_busy()
    return {"other_cpu_busy": busy, "waited_s": round(time.time() - t0 - 1, 1)}


def cmd_version(cmd: list[str], env: dict[str, str] | None = None) -> str | None:
    try:
        p = subprocess.run(cmd, env=env, text=True, capture_output=True, timeout=30)
        return (p.stdout or p.stderr).strip().splitlines()[0] if (p.stdout or p.stderr).strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def machine_info(owlia_python: str) -> dict[str, Any]:
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 2**20, 1)
    return {
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "mem_gib": mem,
        "kernel": platform.release(),
        "os": platform.platform(),
        "python_measuring": sys.version.split()[0],
        "python_owliabot_venv": cmd_version(
            [owlia_python, "-c", "import sys; print(sys.version.split()[0])"]
        ),
        "node_system": cmd_version(["node", "-v"]),
        "node_openclaw": cmd_version([str(node_bin_dir() / "node"), "-v"]),
        "npm": cmd_version(["npm", "-v"]),
        "loadavg_at_start": list(os.getloadavg()),
    }
