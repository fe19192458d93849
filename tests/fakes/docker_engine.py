"""A local Docker Engine API on a Unix socket, enough for the real docker SDK to negotiate a version,
inspect images, create, attach (the hijacked raw stream with 8-byte multiplexed frames), start, wait,
kill, inspect and remove containers - and to really run them.

A container runs its command under bubblewrap with the create body mapped onto it: `Binds` become
bind mounts at their container paths (`:ro` read-only), `NetworkMode: none` keeps the network
namespace unshared (otherwise `--share-net`), `ReadonlyRootfs` remounts / read-only, `Tmpfs` mounts a
sized tmpfs, `User` is the uid/gid inside (and bwrap itself runs as that uid when we are root),
`Env`/`WorkingDir`/`Hostname`/`Cmd` as given, `StdinOnce` closes stdin when the attach client goes,
`AutoRemove` removes the container once it exited. The "image" is this machine's /usr (read-only).

What it does NOT enforce, only records: cgroup limits (`Memory`, `MemorySwap`, `NanoCpus`,
`PidsLimit`), `Ulimits`, `CapDrop` and `SecurityOpt` (bwrap drops every capability anyway), the
engine's seccomp profile, `IpcMode`, `LogConfig`, `noexec` on the tmpfs (bwrap cannot set it), and
image contents. Every request is logged (`requests`) so tests can check what the client sent and
that it never asked for a pull.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import struct
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from skills_runtime.sandbox import SETPRIV, system_binds
from tests.fakes.loop_thread import LoopThread

API_VERSION = "1.45"
IMAGE_ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
FRAME = struct.Struct(">BxxxL")
_VERSIONED = re.compile(r"^/v\d+\.\d+(/.*)$")


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # without the /v1.xx prefix
    query: dict[str, str]
    body: Any


@dataclass
class Container:
    id: str
    name: str
    body: dict[str, Any]
    proc: asyncio.subprocess.Process | None = None
    exit_code: int | None = None
    killed: bool = False
    started: asyncio.Event = field(default_factory=asyncio.Event)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    attached: asyncio.StreamWriter | None = None

    @property
    def host(self) -> dict[str, Any]:
        return self.body.get("HostConfig") or {}

    def inspect(self) -> dict[str, Any]:
        running = self.proc is not None and not self.finished.is_set()
        status = "running" if running else "exited" if self.finished.is_set() else "created"
        return {
            "Id": self.id,
            "Name": f"/{self.name}",
            "Image": self.body.get("Image"),
            "Config": self.body,
            "HostConfig": self.host,
            "State": {
                "Status": status,
                "Running": running,
                "ExitCode": self.exit_code or 0,
                "OOMKilled": False,
            },
        }


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class FakeDockerEngine(LoopThread):
    thread_name = "fake-docker"

    def __init__(self, socket_path: Path, *, images: tuple[str, ...] = ("python:3.11-slim",)) -> None:
        self.socket_path = Path(socket_path)
        self.images = set(images)
        self.requests: list[Request] = []
        self.fail: dict[str, int] = {}  # route name (create, attach, start, ...) -> HTTP status to answer
        self.start_delay = 0.0  # seconds a start request takes (a slow engine)
        self.containers: dict[str, Container] = {}
        self.removed: list[str] = []  # names, in order
        super().__init__()
        self._connections: set[asyncio.Task] = set()
        self._runs: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        server = await asyncio.start_unix_server(self._connection, path=str(self.socket_path))
        self._ready.set()
        await self._stopping.wait()
        server.close()
        for container in list(self.containers.values()):
            self._kill(container)
        if self._runs:
            await asyncio.wait(self._runs, timeout=5)
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await server.wait_closed()

    # -- what tests read ------------------------------------------------------------------------

    def requests_to(self, method: str, pattern: str) -> list[Request]:
        return [r for r in list(self.requests) if r.method == method and re.fullmatch(pattern, r.path)]

    # -- HTTP/1.1 ---------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:] if h)}
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                url = urlsplit(target)
                path = unquote(url.path)
                path = match.group(1) if (match := _VERSIONED.match(path)) else path
                body = json.loads(raw) if raw and "json" in headers.get("content-type", "") else raw or None
                request = Request(method, path, dict(parse_qsl(url.query)), body)
                self.requests.append(request)
                try:
                    hijack = await self._route(request, writer)
                except HttpError as exc:
                    self._reply(writer, exc.status, {"message": str(exc)})
                    hijack = None
                if hijack is not None:
                    await self._attach(hijack, reader, writer)
                    return
                await writer.drain()
        except asyncio.CancelledError:
            return  # the engine is stopping (a cancelled handler task would be logged as an error)
        finally:
            self._connections.discard(task)
            writer.close()

    def _reply(self, writer: asyncio.StreamWriter, status: int, body: Any = None) -> None:
        if isinstance(body, (dict, list)):
            data, kind = json.dumps(body).encode(), "application/json"
        else:
            data, kind = (body or "").encode(), "text/plain; charset=utf-8"
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nApi-Version: {API_VERSION}\r\n"
            f"Content-Type: {kind}\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        writer.write(head.encode() + data)

    def _find(self, ref: str) -> Container:
        for container in list(self.containers.values()):
            if ref in (container.id, container.name) or (len(ref) >= 12 and container.id.startswith(ref)):
                return container
        raise HttpError(404, f"No such container: {ref}")

    async def _route(self, request: Request, writer: asyncio.StreamWriter) -> Container | None:
        method, path = request.method, request.path
        if method == "GET" and path == "/_ping":
            return self._answer(writer, "ping", 200, "OK")
        if method == "GET" and path == "/version":
            return self._answer(
                writer,
                "version",
                200,
                {"ApiVersion": API_VERSION, "MinAPIVersion": "1.24", "Version": "27.0.0-fake", "Os": "linux"},
            )
        if match := re.fullmatch(r"/images/(.+)/json", path):
            if method == "GET" and match.group(1) in self.images:
                return self._answer(
                    writer, "image", 200, {"Id": "sha256:" + "0" * 64, "RepoTags": [match.group(1)]}
                )
            raise HttpError(404, f"No such image: {match.group(1)}")
        if method == "POST" and path == "/containers/create":
            return self._create(request, writer)
        match = re.fullmatch(r"/containers/([^/]+)(/[a-z]+)?", path)
        if match is None:
            raise HttpError(404, f"page not found: {method} {path}")
        container, action = self._find(match.group(1)), match.group(2) or ""
        if method == "GET" and action == "/json":
            return self._answer(writer, "inspect", 200, container.inspect())
        if method == "POST" and action == "/attach":
            self._check("attach")
            writer.write(
                b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                b"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
            )
            return container
        if method == "POST" and action == "/start":
            self._check("start")
            await asyncio.sleep(self.start_delay)
            await self._start(container)
            return self._answer(writer, "start", 204)
        if method == "POST" and action == "/wait":
            await container.finished.wait()
            return self._answer(writer, "wait", 200, {"StatusCode": container.exit_code, "Error": None})
        if method == "POST" and action == "/kill":
            if container.proc is None or container.finished.is_set():
                raise HttpError(409, f"Container {container.id} is not running")
            self._kill(container)
            return self._answer(writer, "kill", 204)
        if method == "DELETE" and not action:
            if container.proc is not None and not container.finished.is_set():
                if request.query.get("force") not in ("True", "true", "1"):
                    raise HttpError(409, "You cannot remove a running container. Stop the container first")
                self._kill(container)
                await container.finished.wait()
            self._remove(container)
            return self._answer(writer, "remove", 204)
        raise HttpError(404, f"page not found: {method} {path}")

    def _check(self, route: str) -> None:
        if route in self.fail:
            raise HttpError(self.fail[route], f"injected failure of {route}")

    def _answer(self, writer: asyncio.StreamWriter, route: str, status: int, body: Any = None) -> None:
        self._check(route)
        self._reply(writer, status, body)

    def _create(self, request: Request, writer: asyncio.StreamWriter) -> None:
        self._check("create")
        body = request.body if isinstance(request.body, dict) else {}
        if body.get("Image") not in self.images:
            raise HttpError(404, f"No such image: {body.get('Image')}")
        name = request.query.get("name") or f"fake_{secrets.token_hex(4)}"
        if any(c.name == name for c in self.containers.values()):
            raise HttpError(409, f"Conflict. The container name /{name} is already in use")
        container = Container(secrets.token_hex(32), name, body)
        self.containers[container.id] = container
        self._reply(writer, 201, {"Id": container.id, "Warnings": []})

    def _remove(self, container: Container) -> None:
        if self.containers.pop(container.id, None) is not None:
            self.removed.append(container.name)

    # -- running ----------------------------------------------------------------------------------

    async def _start(self, container: Container) -> None:
        if container.proc is not None:
            return
        uid, _, gid = (container.body.get("User") or "0").partition(":")
        # As root, bwrap itself runs as the container user, started through setpriv as Bubblewrap does
        # (uvloop, the loop the bot's tests run on, spawns no process with `user=`/`group=`).
        as_user = (
            [SETPRIV, f"--reuid={int(uid)}", f"--regid={int(gid or uid)}", "--clear-groups", "--"]
            if os.geteuid() == 0
            else []
        )
        container.proc = await asyncio.create_subprocess_exec(
            *as_user,
            *bwrap_argv(container),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env={},
            cwd="/",
        )
        container.started.set()
        run = asyncio.create_task(self._run(container))
        self._runs.add(run)
        run.add_done_callback(self._runs.discard)

    async def _run(self, container: Container) -> None:
        proc = container.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        await asyncio.gather(
            self._pump_out(container, proc.stdout, 1), self._pump_out(container, proc.stderr, 2)
        )
        code = await proc.wait()
        container.exit_code = 137 if container.killed else code
        if container.attached is not None:
            container.attached.close()
        container.finished.set()
        if container.host.get("AutoRemove"):
            self._remove(container)

    async def _pump_out(self, container: Container, pipe: asyncio.StreamReader, stream: int) -> None:
        """Output as frames on the attach stream; a slow reader slows the container (drain)."""
        while chunk := await pipe.read(65536):
            writer = container.attached
            if writer is None or writer.is_closing():
                continue  # nobody attached: discarded, as with LogConfig none
            try:
                writer.write(FRAME.pack(stream, len(chunk)) + chunk)
                await writer.drain()
            except ConnectionError:
                container.attached = None

    async def _attach(
        self, container: Container, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """The hijacked connection: raw stdin in, frames out (written by _pump_out)."""
        container.attached = writer
        await writer.drain()
        stdin_task = asyncio.create_task(self._pump_in(container, reader))
        await container.finished.wait()
        stdin_task.cancel()

    async def _pump_in(self, container: Container, reader: asyncio.StreamReader) -> None:
        await container.started.wait()
        proc = container.proc
        assert proc is not None and proc.stdin is not None
        try:
            while data := await reader.read(65536):
                proc.stdin.write(data)
                await proc.stdin.drain()
        except ConnectionError:
            pass
        if container.body.get("StdinOnce"):
            proc.stdin.close()

    def _kill(self, container: Container) -> None:
        if container.proc is not None and container.proc.returncode is None:
            container.killed = True
            try:
                os.killpg(container.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def bwrap_argv(container: Container) -> list[str]:
    """The create body as a bubblewrap command line (see the module docstring for what is left out)."""
    body, host = container.body, container.host
    args = ["/usr/bin/bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    if host.get("NetworkMode") != "none":
        args.append("--share-net")
    uid, _, gid = (body.get("User") or "0").partition(":")
    args += [
        "--uid",
        uid,
        "--gid",
        gid or uid,
        "--hostname",
        body.get("Hostname") or container.id[:12],
        "--clearenv",
    ]
    for item in IMAGE_ENV + list(body.get("Env") or []):
        key, _, value = item.partition("=")
        args += ["--setenv", key, value]
    args += [*system_binds(), "--proc", "/proc", "--dev", "/dev"]
    for path, options in (host.get("Tmpfs") or {}).items():
        size = re.search(r"size=(\d+)", options)
        args += (["--size", size.group(1)] if size else []) + ["--tmpfs", path]
    for bind in host.get("Binds") or []:
        source, target, *mode = bind.split(":")
        args += ["--ro-bind" if mode and "ro" in mode[0].split(",") else "--bind", source, target]
    if host.get("ReadonlyRootfs"):
        args += ["--remount-ro", "/"]
    args += ["--chdir", body.get("WorkingDir") or "/"]
    return args + list(body.get("Entrypoint") or []) + list(body.get("Cmd") or [])
