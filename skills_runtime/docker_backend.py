"""Docker backend: each skill sandbox is a locked-down container, driven over its attach stream.

For deployments that have a Docker engine but no user namespaces for bubblewrap (compose). The
engine is reached only through an explicit local socket (`bot.skills.docker_host`; no DOCKER_HOST,
no TCP: an engine API is root on its host), and the image must already be there: a skill run never
pulls, so it can never fetch code from the internet.

The container is attached before it is started (so nothing can sit unread in the HTTP layer), and
its multiplexed stream is split into the same asyncio readers the bubblewrap pipes give: the line
limit, the flow control and the kill semantics SkillProcess relies on are identical.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
import uuid
from typing import Any

from docker.errors import DockerException, ImageNotFound
from requests.exceptions import RequestException

import docker
from skills_runtime.sandbox import SANDBOX_UID, Limits, SandboxUnavailable, Staged

DEFAULT_HOST = "unix:///var/run/docker.sock"
DEFAULT_IMAGE = "python:3.11-slim"
API_TIMEOUT = 5.0
KILLED = -9
FRAME = struct.Struct(">BxxxL")  # stream (0 stdin, 1 stdout, 2 stderr), 3 zero bytes, big-endian length
CHUNK = 65536
ENGINE_ERRORS = (DockerException, RequestException, OSError)
"""What an absent, refusing or broken engine raises through the SDK (requests errors are not wrapped)."""
ATTACH = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1, "detachKeys": "ctrl-p,ctrl-q"}
"""Detach keys pinned to the engine default (a user's docker config could set printable ones that a
JSON line contains); the bot's JSON is ASCII-escaped, so it never holds a raw control byte."""


def docker_spec(image: str, staged: Staged, entrypoint: str, limits: Limits) -> dict[str, Any]:
    """Keyword arguments for docker SDK `containers.create(...)` with the bubblewrap-equivalent box:
    no network, read-only root, every capability dropped, no-new-privileges, pid/memory/CPU limits,
    ulimits, a non-root user, the skill and SDK mounted read-only and a small noexec tmpfs. Not
    detached: that makes the engine close the skill's stdin when the bot goes (StdinOnce), so a
    container never outlives the bot's connection. No engine-side logging: a flood must not fill the
    engine's disk. No proxy variables from the user's docker config: the environment is LANG/HOME."""
    return {
        "image": image,
        "command": [
            "python3",
            "-I",
            "-S",
            "-B",
            "/owlia/sdk.py",
            json.dumps(limits.rlimits()),
            f"/skill/{entrypoint}",
        ],
        "user": f"{SANDBOX_UID}:{SANDBOX_UID}",
        "network_mode": "none",
        "network_disabled": True,
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "pids_limit": limits.max_processes,
        "mem_limit": limits.memory_mb << 20,
        "memswap_limit": limits.memory_mb << 20,
        "nano_cpus": 1_000_000_000,
        "ulimits": [
            {"name": "nofile", "soft": limits.open_files, "hard": limits.open_files},
            {"name": "fsize", "soft": limits.file_bytes, "hard": limits.file_bytes},
            {"name": "core", "soft": 0, "hard": 0},
        ],
        "tmpfs": {"/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_bytes}"},
        "volumes": {
            str(staged.skill): {"bind": "/skill", "mode": "ro"},
            str(staged.sdk): {"bind": "/owlia/sdk.py", "mode": "ro"},
        },
        "environment": {"LANG": "C.UTF-8", "HOME": "/tmp"},
        "use_config_proxy": False,
        "working_dir": "/tmp",
        "hostname": "skill",
        "stdin_open": True,
        "auto_remove": True,
        "ipc_mode": "none",
        "log_config": {"Type": "none", "Config": {}},
        "labels": {"owliabot.skill": entrypoint},
    }


def _reason(exc: BaseException) -> str:
    """An engine error in one line: its type, HTTP status and the engine's own explanation."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    lines = str(getattr(exc, "explanation", None) or exc).strip().splitlines()
    parts = (type(exc).__name__, str(status or ""), lines[0][:200] if lines else "")
    return " ".join(part for part in parts if part)


class _Flow:
    """The 'transport' of a hand-fed StreamReader: the reader pauses us past 2x its limit and resumes
    us once drained, exactly the flow control a pipe's transport gets, so an unread flood stays in
    the container instead of in the bot's memory."""

    def __init__(self) -> None:
        self.flowing = asyncio.Event()
        self.flowing.set()

    def pause_reading(self) -> None:
        self.flowing.clear()

    def resume_reading(self) -> None:
        self.flowing.set()


class ContainerProcess:
    """A running container as SkillProcess sees a process: `stdin` (writer), `stdout`/`stderr`
    (readers, stdout with the line limit), `returncode`, `wait()`; `kill()` kills and removes it."""

    def __init__(
        self,
        backend: Docker,
        container: str,
        sock: socket.socket,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        line_limit: int,
    ) -> None:
        self.backend = backend
        self.container = container
        self.stdin = writer
        self.stdout = asyncio.StreamReader(limit=line_limit)
        self.stderr = asyncio.StreamReader()
        self.returncode: int | None = None
        self._sock = sock
        self._reader = reader
        self._flows = {1: _Flow(), 2: _Flow()}
        self.stdout.set_transport(self._flows[1])  # type: ignore[arg-type]
        self.stderr.set_transport(self._flows[2])  # type: ignore[arg-type]
        self._loop = asyncio.get_running_loop()
        self._killed = False
        self._destroyed: asyncio.Future[None] | None = None
        self._done = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        """Split the stream until it ends or we kill, then reap: close everything, learn the exit
        status, remove the container."""
        try:
            await self._demultiplex()
        except (asyncio.IncompleteReadError, OSError):
            pass
        self.stdout.feed_eof()
        self.stderr.feed_eof()
        self.stdin.close()
        code = None if self._killed else await asyncio.to_thread(self.backend.exit_code, self.container)
        self.kill()  # removes it whatever happened (auto-remove may have been first: that is fine)
        if self._destroyed is not None:
            await asyncio.shield(self._destroyed)
        self.returncode = KILLED if code is None else code

    async def _demultiplex(self) -> None:
        while True:
            stream, size = FRAME.unpack(await self._reader.readexactly(FRAME.size))
            target = {1: self.stdout, 2: self.stderr}.get(stream)
            while size:
                chunk = await self._reader.read(min(size, CHUNK))
                if not chunk:
                    raise asyncio.IncompleteReadError(b"", size)
                size -= len(chunk)
                if target is not None:
                    await self._flows[stream].flowing.wait()
                    if self._killed:
                        return
                    target.feed_data(chunk)

    def kill(self) -> None:
        """Close the stream now and kill + remove the container in a thread; `wait()` awaits both.
        Works after the event loop that started it is gone (then in a plain daemon thread)."""
        if self._killed:
            return
        self._killed = True
        for flow in self._flows.values():
            flow.resume_reading()  # a pump paused on an unread reader must see the kill
        if self._loop.is_closed():
            self._sock.close()
            threading.Thread(target=self.backend.destroy, args=(self.container,), daemon=True).start()
            return
        self._destroyed = self._loop.run_in_executor(None, self.backend.destroy, self.container)
        self.stdin.close()

    async def wait(self) -> int:
        await asyncio.shield(self._done)
        assert self.returncode is not None
        return self.returncode


class Docker:
    """Skills in containers of a local Docker engine (see the module docstring)."""

    name = "docker"

    def __init__(
        self, host: str = DEFAULT_HOST, image: str = DEFAULT_IMAGE, *, timeout: float = API_TIMEOUT
    ) -> None:
        self.host = host
        self.image = image
        self.timeout = timeout
        self._client: docker.DockerClient | None = None
        self._lock = threading.Lock()

    def _api(self) -> docker.DockerClient:
        """The SDK client for exactly `host` (never the environment's DOCKER_HOST), API negotiated."""
        if not self.host.startswith("unix://"):
            raise SandboxUnavailable(f"docker_host must be a local unix:// socket, not {self.host!r}")
        with self._lock:
            if self._client is None:
                self._client = docker.DockerClient(base_url=self.host, version="auto", timeout=self.timeout)
            return self._client

    def unavailable(self) -> str | None:
        try:
            client = self._api()
            client.ping()
        except SandboxUnavailable as exc:
            return str(exc)
        except ENGINE_ERRORS as exc:  # no socket, no permission, a broken engine: all mean "not here"
            return f"no Docker engine answers at {self.host} ({_reason(exc)})"
        try:
            client.images.get(self.image)
        except ImageNotFound:
            return (
                f"the image {self.image} is not on the engine; skills never pull, "
                f"load it yourself (docker pull {self.image})"
            )
        except ENGINE_ERRORS as exc:
            return f"the engine cannot inspect the image {self.image} ({_reason(exc)})"
        return None

    async def spawn(
        self, staged: Staged, entrypoint: str, limits: Limits, line_limit: int
    ) -> ContainerProcess:
        name = f"owlia-skill-{uuid.uuid4().hex[:16]}"
        launch = asyncio.ensure_future(
            asyncio.to_thread(self._launch, name, docker_spec(self.image, staged, entrypoint, limits))
        )
        try:
            sock = await asyncio.shield(launch)
        except asyncio.CancelledError:  # the thread runs on: whatever it starts is removed when it ends
            launch.add_done_callback(lambda done: self._discard(done, name))
            raise
        try:
            reader, writer = await asyncio.open_unix_connection(sock=sock, limit=CHUNK)
        except BaseException:
            sock.close()
            await asyncio.to_thread(self.destroy, name)
            raise
        return ContainerProcess(self, name, sock, reader, writer, line_limit)

    def _launch(self, name: str, spec: dict[str, Any]) -> socket.socket:
        """Create, attach, start (blocking; run in a thread). Any failure removes the container (by
        the name we chose, so even a create whose answer was lost) and raises SandboxUnavailable."""
        sock: socket.socket | None = None
        try:
            client = self._api()
            container = client.containers.create(name=name, **spec)
            attached = client.api.attach_socket(container.id, params=ATTACH)
            sock = socket.socket(fileno=getattr(attached, "_sock", attached).detach())
            container.start()
        except (SandboxUnavailable, *ENGINE_ERRORS) as exc:
            if sock is not None:
                sock.close()
            self.destroy(name)
            raise SandboxUnavailable(f"the Docker engine could not run the skill ({_reason(exc)})") from None
        return sock

    def _discard(self, launch: asyncio.Future[socket.socket], name: str) -> None:
        if not launch.cancelled() and launch.exception() is None:
            launch.result().close()
            threading.Thread(target=self.destroy, args=(name,), daemon=True).start()

    def exit_code(self, container: str) -> int | None:
        """The exit status once the stream has ended, or None if the engine cannot say in time (or
        auto-remove was quicker than us)."""
        try:
            return int(self._api().api.wait(container, timeout=self.timeout)["StatusCode"])
        except (SandboxUnavailable, *ENGINE_ERRORS, KeyError, TypeError, ValueError):
            return None

    def destroy(self, container: str) -> None:
        """Kill and remove; 'already gone' (or not running) is fine, other errors are left to
        auto-remove and to StdinOnce (the stream is closed, so the skill's stdin ends)."""
        with contextlib.suppress(SandboxUnavailable, *ENGINE_ERRORS):
            api = self._api().api
            with contextlib.suppress(*ENGINE_ERRORS):
                api.kill(container)
            api.remove_container(container, force=True)

    def kill(self, proc: ContainerProcess) -> None:
        proc.kill()

    def snapshot(self, proc: ContainerProcess) -> None:
        """A container's processes belong to the engine (another pid namespace, perhaps another VM),
        so the bot cannot watch them between calls: a container is never kept warm, it is removed
        after each call."""
        return None
