"""Ending a process a test or a bench started (`owlia start` and the like): SIGTERM, as a service
manager stops it, then SIGKILL if it has not exited within the grace, so no run leaves one behind."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, grace: float = 30.0) -> int:
    """SIGTERM `proc`, wait up to `grace` seconds, then kill it; its exit status."""
    proc.terminate()
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
