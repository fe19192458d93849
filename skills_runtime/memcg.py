"""A memory ceiling for a whole sandbox (every process in it together), from a memory cgroup.

Rlimits bound each process alone (RLIMIT_AS x RLIMIT_NPROC: 4 GiB x 64 for an MCP server), which on
a small machine is no bound at all. A cgroup bounds the tree: the sandbox is started inside a fresh
child of the bot's own memory cgroup, whose limit the kernel enforces by reclaiming and then killing
(cgroup v2 kills the whole group: `memory.oom.group`). Whichever hierarchy the machine mounts is used:

* v2 (`0::/path` in /proc/self/cgroup): needs `memory` in the bot's cgroup's `cgroup.subtree_control`
  (a systemd unit with `Delegate=yes`, or a container whose cgroup is delegated);
* v1 (`N:memory:/path`): needs a writable memory hierarchy (the bot as root, or a delegated subtree).

The sandbox joins the cgroup before anything of it runs: the spawn is prefixed with a shell that
writes its own pid to `cgroup.procs`, then execs bubblewrap; a failed write stops the spawn. When no
cgroup can be made, `open_ceiling` says why and the caller falls back to polling the tree's resident
memory (`proctree.resident_bytes`), which the per-process rlimits bound between two polls.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

_SERIAL = itertools.count()
JOIN = 'echo 0 > "$0" && exec "$@"'
"""`sh -c JOIN PROCS argv...`: the shell moves itself into the cgroup (0 = the writer), then execs argv."""


@dataclass(frozen=True)
class Ceiling:
    """One sandbox's memory cgroup."""

    path: Path
    version: int
    limit: int

    def join_prefix(self) -> list[str]:
        """What the spawn's argv starts with, so that the sandbox is inside before it runs anything."""
        return ["/bin/sh", "-c", JOIN, str(self.path / "cgroup.procs")]

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the ceiling (0 if it cannot tell)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            text = (self.path / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def remove(self) -> bool:
        """Remove the cgroup; False while processes are still in it (the kernel frees them just after
        they die: call again a moment later)."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


def _sweep(parent: Path, label: str) -> None:
    """Remove the empty cgroups a bot that died left behind (their pid no longer runs)."""
    with contextlib.suppress(OSError):
        for child in parent.glob(f"owlia-{label}-*-*"):
            pid = child.name.split("-")[2]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    child.rmdir()


def _mounts() -> dict[str, tuple[Path, str]]:
    """fstype 'cgroup2' -> (mount point, ''), and each v1 controller -> (mount point, options)."""
    found: dict[str, tuple[Path, str]] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        point = Path(fields[4].replace("\\040", " "))
        if rest[0] == "cgroup2":
            found.setdefault("cgroup2", (point, ""))
        elif rest[0] == "cgroup":
            for option in rest[2].split(","):
                found.setdefault(option, (point, rest[2]))
    return found


def _own() -> dict[str, str]:
    """This process's cgroup per hierarchy: '' -> v2 path, 'memory' -> v1 memory path."""
    own: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    return own


def _make(parent: Path, name: str, version: int, limit: int) -> Ceiling:
    _sweep(parent, name.split("-")[1])  # owlia-<label>-<pid>-<serial>
    path = parent / name
    path.mkdir(mode=0o755)
    try:
        if version == 2:
            if not (path / "memory.max").exists():
                raise OSError("the memory controller is not enabled for the bot's cgroup's children")
            (path / "memory.max").write_text(str(limit))
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")
            with contextlib.suppress(OSError):
                (path / "memory.oom.group").write_text("1")
        else:
            (path / "memory.limit_in_bytes").write_text(str(limit))
            with contextlib.suppress(OSError):  # only with swap accounting
                (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        raise
    return Ceiling(path, version, limit)


def open_ceiling(label: str, limit: int) -> tuple[Ceiling | None, str]:
    """(a fresh memory cgroup limited to `limit` bytes, how) or (None, why not). `label`: letters only."""
    name = f"owlia-{label}-{os.getpid()}-{next(_SERIAL)}"
    mounts, own, reasons = _mounts(), _own(), []
    if "cgroup2" in mounts and "" in own:
        parent = mounts["cgroup2"][0] / own[""].lstrip("/")
        try:
            return _make(parent, name, 2, limit), "cgroup v2"
        except OSError as exc:
            reasons.append(f"cgroup v2: {exc.strerror or exc}")
    if "memory" in mounts and "memory" in own:
        parent = mounts["memory"][0] / own["memory"].lstrip("/")
        try:
            return _make(parent, name, 1, limit), "cgroup v1"
        except OSError as exc:
            reasons.append(f"cgroup v1: {exc.strerror or exc}")
    if not reasons:
        reasons.append("this machine mounts no memory cgroup")
    return None, "; ".join(reasons)
