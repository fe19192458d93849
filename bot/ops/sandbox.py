"""Is a skill sandbox backend actually usable here? A binary on PATH is not enough.

bubblewrap can be installed yet unusable (no user namespaces, a seccomp'd container), so the
probe runs the same kind of isolation skills get, `bwrap --unshare-all --ro-bind / / true`,
and only a zero exit counts.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

DOCKER_SOCKET = Path("/var/run/docker.sock")
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class SandboxProbe:
    backend: str | None  # the backend that works, None if none does
    detail: str


def _bwrap_works() -> tuple[bool, str]:
    path = shutil.which("bwrap")
    if path is None:
        return False, "bwrap is not installed"
    try:
        done = subprocess.run([path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                              capture_output=True, timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap could not run ({type(exc).__name__})"
    if done.returncode != 0:
        return False, f"bwrap is installed but a trial sandbox failed (exit {done.returncode})"
    return True, f"bubblewrap at {path}"


def probe_sandbox(backend: str) -> SandboxProbe:
    """The usable backend for the configured choice (`auto` tries bubblewrap, then gVisor, then docker)."""
    failures: list[str] = []
    if backend in ("auto", "bubblewrap"):
        ok, detail = _bwrap_works()
        if ok:
            return SandboxProbe("bubblewrap", detail)
        failures.append(detail)
    if backend in ("auto", "gvisor"):
        runsc = shutil.which("runsc")
        if runsc:
            return SandboxProbe("gvisor", f"runsc at {runsc}")
        failures.append("runsc (gVisor) is not installed")
    if backend in ("auto", "docker"):
        if DOCKER_SOCKET.is_socket():
            return SandboxProbe("docker", f"docker engine at {DOCKER_SOCKET}")
        failures.append("no docker engine socket")
    return SandboxProbe(None, "; ".join(failures))
