"""A stdio MCP server in the skills' bubblewrap sandbox.

The same box as a skill (skills_runtime.sandbox.Box, started by its Bubblewrap): new user/pid/net/ipc/uts/cgroup namespaces and no way
to make more, all capabilities dropped, uid 65534, a read-only root holding only `/usr` (and the
`/bin`, `/lib*` links), a fresh `/proc`, a minimal `/dev`, a 16 MiB private `/tmp`, an empty
environment (plus the declaration's non-secret `env`), no home, no OWLIA_HOME, no signer socket,
the seccomp filter, killed with the bot. A server the user allowed hosts for also gets the bot's
egress proxy (egress.py) bound at /owlia/egress.sock, the socket calls in seccomp, and
HTTPS_PROXY/HTTP_PROXY pointing at launch.py's relay. What differs otherwise: the server's own files are not copied in but
bound read-only at their own paths (`binds`: a venv, a node_modules), the seccomp variant allows
`socketpair(AF_UNIX)` (event loops need one; `socket`/`connect` stay denied, and the net namespace
has no interface anyway), and the rlimits are set by a small launcher before it execs the server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

from bot.config import McpSettings
from bot.mcp_servers.binds import Protected, check_binds
from bot.mcp_servers.store import McpError, ServerDecl
from skills_runtime.mcp import LAUNCHER
from skills_runtime.memcg import Ceiling, open_ceiling
from skills_runtime.sandbox import Box, Bubblewrap, Limits, SandboxUnavailable
from skills_runtime.seccomp import filter_fd

RESERVED = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/proc", "/dev", "/owlia")


class McpSandbox:
    def __init__(
        self, settings: McpSettings, protected: tuple[Protected, ...], bwrap: Bubblewrap | None = None
    ) -> None:
        self.settings = settings
        self.protected = protected
        """Folders no bind may expose (binds.py), checked again at every start."""
        self.use_cgroup = True
        """False: hold memory by polling even where a cgroup could be made (the fallback's own tests)."""
        self.bwrap = bwrap or Bubblewrap()
        self._staged: Path | None = None

    def unavailable(self) -> str | None:
        return self.bwrap.unavailable()

    def _launcher(self) -> Path:
        """A copy the sandbox user can read and nobody can change, made once per bot process."""
        if self._staged is None or not self._staged.exists():
            root = Path(tempfile.mkdtemp(prefix="owlia-mcp-"))
            shutil.copyfile(LAUNCHER, root / "launch.py")
            (root / "launch.py").chmod(0o444)
            root.chmod(0o711)
            self._staged = root / "launch.py"
        return self._staged

    def limits(self) -> Limits:
        s = self.settings
        return Limits(
            memory_mb=s.memory_mb, cpu_seconds=s.cpu_seconds, max_processes=s.max_processes, open_files=256
        )

    def argv(self, decl: ServerDecl, seccomp_fd: int, egress: Path | None = None) -> list[str]:
        env = sorted(decl.env.items())
        if egress is not None:  # launch.py relays 127.0.0.1:3128 to the bot's checked proxy
            env += [
                (key, "http://127.0.0.1:3128")
                for key in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
            ]
        binds = [
            (os.path.realpath(path), path) for path in self._checked_binds(decl)
        ]  # what was checked is bound
        if egress is not None:
            binds.append((str(egress), "/owlia/egress.sock"))
        binds.append((str(self._launcher()), "/owlia/launch.py"))
        limits = self.limits()
        box = Box(
            hostname="mcp",
            tmpfs_bytes=limits.tmpfs_bytes,
            python="/usr/bin/python3",
            runner="/owlia/launch.py",
            rlimits=limits.rlimits(),
            command=tuple(decl.command),
            env=tuple(env),
            binds=tuple(binds),
        )
        return box.argv(self.bwrap.bwrap, seccomp_fd)

    def _checked_binds(self, decl: ServerDecl) -> list[str]:
        for path in decl.binds:
            if path == "/tmp":
                raise SandboxUnavailable(f"{decl.name}: /tmp cannot be bound (the sandbox's own)")
            if any(path == r or path.startswith(r + "/") for r in RESERVED) or path == "/":
                raise SandboxUnavailable(
                    f"{decl.name}: {path} cannot be bound (a system path of the sandbox)"
                )
            if not Path(path).exists():
                raise SandboxUnavailable(f"{decl.name}: {path} does not exist")
            try:
                check_binds(decl.name, (path,), self.protected)
            except McpError as exc:
                raise SandboxUnavailable(str(exc)) from None
        return list(decl.binds)

    def ceiling(self) -> tuple[Ceiling | None, str]:
        """A memory cgroup for one server's whole sandbox (memcg.py), or None and why (then polled)."""
        limit = self.settings.memory_ceiling_mb << 20
        if not self.use_cgroup:
            return None, "cgroups turned off for this sandbox"
        return open_ceiling("mcp", limit)

    async def spawn(
        self, decl: ServerDecl, line_limit: int, egress: Path | None = None
    ) -> tuple[asyncio.subprocess.Process, Ceiling | None, str]:
        """The running sandbox, its memory cgroup (None: the caller polls its memory instead) and how
        its memory is held, in words for the audit."""
        why = self.unavailable()
        if why is not None:
            raise SandboxUnavailable(why)
        argv = self.argv(decl, -1, egress)  # refusals (binds) before a cgroup is made
        ceiling, how = self.ceiling()
        fd = filter_fd(unix_pairs=True, sockets=egress is not None)
        try:
            argv = self.argv(decl, fd, egress)
            prefix = ceiling.join_prefix() if ceiling is not None else []
            proc = await self.bwrap.start(argv, fd, line_limit, prefix)
        except BaseException:
            if ceiling is not None:
                ceiling.remove()
            raise
        finally:
            os.close(fd)
        return proc, ceiling, how

    def remove(self) -> None:
        if self._staged is not None:
            shutil.rmtree(self._staged.parent, ignore_errors=True)
            self._staged = None
