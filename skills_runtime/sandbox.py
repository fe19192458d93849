"""Sandbox backends: how a skill process is started so that it cannot leave its box.

Each backend turns (a verified skill folder, limits) into a running process whose stdin/stdout are
the JSON-RPC channel. `select_backend` picks one or returns None: there is no unsandboxed fallback,
and a skill without a backend does not run.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from skills_runtime import proctree, tree
from skills_runtime.seccomp import filter_fd

SDK_SOURCE = Path(__file__).with_name("sdk.py")
SANDBOX_UID = 65534
"""When the bot runs as root, the sandbox runs as nobody: the kernel never applies RLIMIT_NPROC to
uid 0, so a fork bomb would otherwise be bounded only by the timeout."""
SETPRIV = "/usr/bin/setpriv"  # util-linux: how a bot running as root starts bubblewrap as SANDBOX_UID


class SandboxUnavailable(RuntimeError):
    """No usable backend, or the chosen one cannot start; the skill does not run."""


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 256
    cpu_seconds: int = 30
    max_processes: int = 32
    file_bytes: int = 16 << 20
    open_files: int = 64
    tmpfs_bytes: int = 16 << 20

    def rlimits(self) -> dict[str, int]:
        return {
            "as": self.memory_mb << 20,
            "cpu": self.cpu_seconds,
            "fsize": self.file_bytes,
            "nproc": self.max_processes,
            "nofile": self.open_files,
            "core": 0,
        }


@dataclass(frozen=True)
class Staged:
    """A private, read-only copy of a verified skill plus the SDK, for one backend to mount."""

    root: Path
    skill: Path
    sdk: Path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def stage(folder: Path, expected_hash: str) -> Staged:
    """Copy the skill out of the 0700 store into a tree the sandbox user can read but not change,
    and hash the copy: what runs is exactly what was approved, whatever happens to the store later."""
    root = Path(tempfile.mkdtemp(prefix="owlia-skill-"))
    try:
        tree.copy_tree(folder, root / "skill")
        if tree.tree_hash(root / "skill") != expected_hash:
            raise SandboxUnavailable("the skill changed while it was being staged")
        shutil.copyfile(SDK_SOURCE, root / "sdk.py")
        for path in [root / "skill", *sorted((root / "skill").rglob("*")), root / "sdk.py"]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        root.chmod(0o711)  # the sandbox user may enter, not list
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Staged(root, root / "skill", root / "sdk.py")


class SandboxProcess(Protocol):
    """What SkillProcess drives: asyncio's Process for bubblewrap, a container stream for Docker."""

    stdin: asyncio.StreamWriter | None
    stdout: asyncio.StreamReader | None
    stderr: asyncio.StreamReader | None

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


P = TypeVar("P", bound=SandboxProcess)


class Backend(Protocol[P]):
    """A sandbox kind; it kills and looks inside only the processes it spawned itself (`P`)."""

    name: str

    def unavailable(self) -> str | None:
        """Why this backend cannot run skills here, or None if it can."""
        ...

    async def spawn(self, staged: Staged, entrypoint: str, limits: Limits, line_limit: int) -> P:
        """Start the sandbox with stdin/stdout as the RPC pipes; reading a longer line fails."""
        ...

    def kill(self, proc: P) -> None:
        """Kill the whole sandbox at once, without blocking; `proc.wait()` then returns."""
        ...

    def snapshot(self, proc: P) -> proctree.Snapshot | None:
        """What runs in the sandbox now (see proctree), or None if this backend cannot look inside;
        the host then does not keep the sandbox warm between calls."""
        ...


def sandbox_python() -> tuple[str, list[str]]:
    """The interpreter to run inside (system python, else the venv's base one) and its ro binds."""
    if Path("/usr/bin/python3").exists():
        return "/usr/bin/python3", []
    base = Path(sys.base_prefix)
    return str(base / "bin" / "python3"), [str(base)]


def system_binds() -> list[str]:
    """The host's `/usr` read-only, and the `/bin`, `/lib*` tops as they are there (links or folders)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32"):
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            args += ["--ro-bind", top, top]
    return args


@dataclass(frozen=True)
class Box:
    """One bubblewrap box, the same for a skill and an MCP server (bot/mcp_servers/sandbox.py); only
    what runs in it and what it sees differs. `runner` (the SDK, the MCP launcher) applies `rlimits`
    before it execs or imports `command`."""

    hostname: str
    tmpfs_bytes: int
    python: str
    runner: str
    rlimits: dict[str, int]
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    """Set after PATH, LANG and HOME, in this order."""
    binds: tuple[tuple[str, str], ...] = ()
    """(host path, path inside) bound read-only after the tmpfs: a path under the host's /tmp stays visible."""

    def argv(self, bwrap: str, seccomp_fd: int) -> list[str]:
        args = [
            bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_UID),
            "--hostname",
            self.hostname,
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--setenv",
            "HOME",
            "/tmp",
        ]
        for key, value in self.env:
            args += ["--setenv", key, value]
        args += [
            *system_binds(),
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(self.tmpfs_bytes),
            "--tmpfs",
            "/tmp",
        ]
        for source, target in self.binds:
            args += ["--ro-bind", source, target]
        args += [
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--chdir",
            "/tmp",
            "--seccomp",
            str(seccomp_fd),
            self.python,
            "-I",
            "-S",
            "-B",
            self.runner,
            json.dumps(self.rlimits),
            *self.command,
        ]
        return args


class Bubblewrap:
    """bwrap: new user/pid/net/ipc/uts/cgroup namespaces, no way to make more, read-only system,
    the skill read-only, a small private tmpfs, empty environment, no home, no OWLIA_HOME, no signer
    socket, seccomp, rlimits (applied by the SDK before skill code loads), killed with its parent."""

    name = "bubblewrap"

    def __init__(self, bwrap: str | None = None) -> None:
        self.bwrap = bwrap or shutil.which("bwrap") or "/usr/bin/bwrap"
        self._probe: str | None | bool = False

    def unavailable(self) -> str | None:
        if self._probe is False:
            self._probe = self._check()
        return self._probe  # type: ignore[return-value]

    def _check(self) -> str | None:
        if not Path(self.bwrap).exists():
            return "bubblewrap (bwrap) is not installed"
        try:
            importlib.import_module("pyseccomp")  # the filter cannot be built without it
        except (ImportError, OSError):
            return "pyseccomp/libseccomp is not available, so no seccomp filter can be applied"
        if os.geteuid() == 0 and not Path(SETPRIV).exists():
            return (
                f"running as root, the sandbox needs {SETPRIV} (util-linux) to start as uid {SANDBOX_UID}: "
                "install util-linux, or run the bot as an ordinary user"
            )
        argv = [
            *self.as_sandbox_user(),
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            *system_binds(),
            "true",
        ]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap cannot start ({type(exc).__name__})"
        if done.returncode != 0:
            return f"bubblewrap cannot create namespaces here: {done.stderr.decode(errors='replace')[:200]}"
        return None

    @staticmethod
    def as_sandbox_user() -> list[str]:
        """What bubblewrap's argv starts with: nothing for an ordinary user; as root, util-linux's
        `setpriv`, which takes every uid and gid to the sandbox user and drops the supplementary
        groups (and with uid 0 every capability) before it execs bwrap. An exec in the child, not
        arguments to the event loop: uvloop, the bot's loop, spawns no process with `user=`/`group=`."""
        if os.geteuid() != 0:
            return []
        return [SETPRIV, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups", "--"]

    def argv(self, staged: Staged, entrypoint: str, limits: Limits, seccomp_fd: int) -> list[str]:
        python, python_binds = sandbox_python()
        box = Box(
            hostname="skill",
            tmpfs_bytes=limits.tmpfs_bytes,
            python=python,
            runner="/owlia/sdk.py",
            rlimits=limits.rlimits(),
            command=(f"/skill/{entrypoint}",),
            binds=(
                *((path, path) for path in python_binds),
                (str(staged.skill), "/skill"),
                (str(staged.sdk), "/owlia/sdk.py"),
            ),
        )
        return box.argv(self.bwrap, seccomp_fd)

    async def spawn(
        self, staged: Staged, entrypoint: str, limits: Limits, line_limit: int
    ) -> asyncio.subprocess.Process:
        fd = filter_fd()
        try:
            return await self.start(self.argv(staged, entrypoint, limits, fd), fd, line_limit)
        finally:
            os.close(fd)

    async def start(
        self, argv: list[str], seccomp_fd: int, line_limit: int, prefix: Sequence[str] = ()
    ) -> asyncio.subprocess.Process:
        """A box's argv started as the sandbox user in its own session, stdin/stdout/stderr piped, the
        filter's descriptor passed (the caller closes it); `prefix` runs first (a cgroup's joiner)."""
        return await asyncio.create_subprocess_exec(
            *prefix,
            *self.as_sandbox_user(),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=(seccomp_fd,),
            start_new_session=True,
            cwd="/",
            env={},
            limit=line_limit,
        )

    def kill(self, proc: asyncio.subprocess.Process) -> None:
        """SIGKILL bwrap's process group: it takes the sandbox's whole pid namespace down with it."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def snapshot(self, proc: asyncio.subprocess.Process) -> proctree.Snapshot:
        """The sandbox's processes as the host's /proc shows them under bwrap's pid."""
        return proctree.snapshot(proc.pid)


class GVisor:
    name = "gvisor"

    def unavailable(self) -> str | None:
        if shutil.which("runsc") is None:
            return "gVisor (runsc) is not installed"
        return "the gVisor backend is not implemented in this build; use bubblewrap"

    async def spawn(
        self, staged: Staged, entrypoint: str, limits: Limits, line_limit: int
    ) -> asyncio.subprocess.Process:
        raise SandboxUnavailable(self.unavailable() or "gvisor backend unavailable")

    def kill(self, proc: SandboxProcess) -> None:
        """Nothing to kill: spawn never starts anything."""

    def snapshot(self, proc: SandboxProcess) -> None:
        return None


def select_backend(
    choice: str, *, docker_host: str | None = None, docker_image: str | None = None
) -> tuple[Backend[Any] | None, str]:
    """(backend, why) for `skills.backend`: auto tries bubblewrap, then docker. None means no skill runs."""

    def docker() -> Backend[Any]:  # the docker SDK is imported only when Docker is actually considered
        from skills_runtime.docker_backend import DEFAULT_HOST, DEFAULT_IMAGE, Docker  # lazy: 56 ms, 8880 KiB

        return Docker(docker_host or DEFAULT_HOST, docker_image or DEFAULT_IMAGE)

    choices: dict[str, list[Callable[[], Backend[Any]]]] = {
        "bubblewrap": [Bubblewrap],
        "docker": [docker],
        "gvisor": [GVisor],
        "auto": [Bubblewrap, docker],
    }
    candidates = choices[choice]
    reasons = []
    for make in candidates:
        backend = make()
        reason = backend.unavailable()
        if reason is None:
            return backend, backend.name
        reasons.append(f"{backend.name}: {reason}")
    return None, "; ".join(reasons)
