"""The Docker backend through the real docker SDK against a local Docker Engine API (tests/fakes/
docker_engine.py) that speaks the wire protocol - hijacked attach, multiplexed frames - and runs each
container under bubblewrap, so real skills answer real calls and hostile ones get killed."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from bot.config import SkillSettings
from bot.observability.audit import BotAudit, skills_audit_path
from bot.skills.capabilities import Capabilities
from bot.skills.host import SkillHost
from bot.skills.tools import SkillTools, skill_tool
from bot.tools.chain_reader import RpcChainReader
from skills_runtime.docker_backend import FRAME, ContainerProcess, Docker, docker_spec
from skills_runtime.process import SkillCallError, SkillProcess
from skills_runtime.sandbox import Bubblewrap, Limits, SandboxUnavailable, Staged, select_backend, stage
from skills_runtime.store import SkillStore
from skills_runtime.tree import tree_hash
from tests.fakes.docker_engine import FakeDockerEngine
from tests.skills.conftest import (
    EXAMPLES,
    FAST,
    HOSTILE,
    Loaded,
    audit_records,
    install,
    make_ctx,
    needs_bwrap,
    sandbox_processes,
)

EVIL = HOSTILE / "evil"
GAS = EXAMPLES / "gas_tracker"
IMAGE = "python:3.11-slim"


@pytest.fixture()
def sockets() -> Iterator[Path]:
    """A short directory for Unix sockets (pytest's tmp_path can pass the 108-byte limit)."""
    path = Path(tempfile.mkdtemp(prefix="dk-"))
    yield path
    for item in path.iterdir():
        item.unlink()
    path.rmdir()


@pytest.fixture()
def engine(sockets: Path) -> Iterator[FakeDockerEngine]:
    with FakeDockerEngine(sockets / "docker.sock", images=(IMAGE,)) as running:
        yield running


def wait_gone(engine: FakeDockerEngine, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while (engine.containers or sandbox_processes()) and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.fixture()
def docker_skills(home: Path, tmp_path: Path, engine: FakeDockerEngine):
    """docker_skills(scenario, folder, settings=..., **services): like conftest's run_skills, with the
    host on the Docker backend pointed at the fake engine; the host is always closed."""

    def run(scenario: Any, folder: Path, *, settings: SkillSettings = FAST, **services: Any) -> Any:
        name = install(home, folder)
        skill = SkillStore(home).load(name)
        audit = BotAudit(skills_audit_path(home))
        host = SkillHost(Docker(engine.url, IMAGE), settings, audit, Capabilities(audit, None))
        tools = SkillTools([skill_tool(host, skill, decl) for decl in skill.manifest.tools], host)
        loaded = Loaded(tools, make_ctx(tmp_path, **services))

        async def go() -> Any:
            try:
                return await scenario(loaded)
            finally:
                await tools.close()

        return asyncio.run(asyncio.wait_for(go(), 30))

    return run


@pytest.fixture()
def staged_copy() -> Iterator[Callable[[Path], Staged]]:
    """Stage a skill folder as the host does; every copy made is removed when the test ends."""
    made: list[Staged] = []

    def make(folder: Path) -> Staged:
        made.append(stage(folder, tree_hash(folder)))
        return made[-1]

    yield make
    for staged in made:
        staged.remove()


# -- end to end ---------------------------------------------------------------------------------


@needs_bwrap
def test_the_example_skill_answers_through_the_sdk_and_its_container_is_removed(engine, anvil, staged_copy):
    from bot.devchain import rpc

    reader = RpcChainReader({31337: anvil.url})
    staged = staged_copy(GAS)

    async def chain(method: str, params: dict[str, Any]) -> Any:
        assert method == "core.chain"
        return await reader.call(31337, params["method"], *params["params"])

    async def go() -> tuple[list[str], Any, Any, int | None]:
        process = SkillProcess(Docker(engine.url, IMAGE), staged, "main.py", Limits(), max_message=1 << 20)
        await process.start(10)
        listed = await process.request("tools/list", {}, timeout=5, on_callback=None)
        result = await process.request(
            "tools/call",
            {"name": "gas_price", "arguments": {"gas_units": 50000}},
            timeout=5,
            on_callback=chain,
        )
        await process.shutdown()
        assert process.proc is not None
        return process.exported, listed, result, process.proc.returncode

    exported, listed, result, code = asyncio.run(go())
    wei = int(rpc(anvil.url, "eth_gasPrice", []), 16)
    assert exported == ["gas_price"] and "gas_price" in json.dumps(listed)
    assert result["data"]["gas_price_wei"] == str(wei) and result["data"]["cost_wei"] == str(wei * 50000)
    assert code is not None
    wait_gone(engine)
    assert engine.containers == {} and sandbox_processes() == []
    assert len(engine.removed) == 1 and engine.removed[0].startswith("owlia-skill-")
    order = [
        (r.method, r.path.rsplit("/", 1)[-1]) for r in engine.requests if r.path.startswith("/containers/")
    ]
    assert order[:4] == [("POST", "create"), ("GET", "json"), ("POST", "attach"), ("POST", "start")]
    attach = engine.requests_to("POST", r"/containers/[^/]+/attach")[0]
    assert attach.query == {
        "stdin": "1",
        "stdout": "1",
        "stderr": "1",
        "stream": "1",
        "detachKeys": "ctrl-p,ctrl-q",
    }
    assert not engine.requests_to("POST", r"/images/.*")  # never a pull


@needs_bwrap
def test_a_tool_call_through_the_host_is_audited_under_the_docker_backend(docker_skills, engine, home, anvil):
    from bot.devchain import rpc

    async def scenario(loaded):
        return await loaded.result("gas_tracker", "gas_price", gas_units=21000)

    found = docker_skills(scenario, GAS, chain=RpcChainReader({31337: anvil.url}))
    assert int(found["gas_price_wei"]) == int(rpc(anvil.url, "eth_gasPrice", []), 16)
    started = [r for r in audit_records(home) if r["kind"] == "skill.started"]
    assert len(started) == 1 and started[0]["backend"] == "docker" and started[0]["missing"] == []
    wait_gone(engine)
    assert engine.containers == {} and sandbox_processes() == []


@needs_bwrap
def test_several_skills_start_at_once_through_one_client(engine, staged_copy):
    """The SDK client is shared by the worker threads of concurrent starts and kills."""
    backend = Docker(engine.url, IMAGE)
    staged = [staged_copy(GAS) for _ in range(4)]

    async def one(copy: Staged) -> list[str]:
        process = SkillProcess(backend, copy, "main.py", Limits(), max_message=1 << 20)
        await process.start(10)
        await process.kill()
        return process.exported

    async def go() -> list[list[str]]:
        return await asyncio.gather(*(one(copy) for copy in staged))

    assert asyncio.run(go()) == [["gas_price"]] * 4
    wait_gone(engine)
    assert engine.containers == {} and len(engine.removed) == 4 and sandbox_processes() == []


@needs_bwrap
def test_an_engine_that_dies_under_a_warm_skill_fails_the_call_without_hanging(sockets, staged_copy):
    staged = staged_copy(GAS)
    engine = FakeDockerEngine(sockets / "docker.sock", images=(IMAGE,)).start()

    async def go() -> tuple[str, float]:
        process = SkillProcess(
            Docker(engine.url, IMAGE, timeout=1), staged, "main.py", Limits(), max_message=1 << 20
        )
        await process.start(10)
        engine.stop()  # kills its containers and drops every connection
        started = time.monotonic()
        with pytest.raises(SkillCallError) as caught:
            await process.request("tools/list", {}, timeout=5, on_callback=None)
        await process.kill()
        return str(caught.value), time.monotonic() - started

    failure, seconds = asyncio.run(go())
    assert "exited" in failure and seconds < 4
    assert sandbox_processes() == []


# -- the container on the wire -------------------------------------------------------------------


@needs_bwrap
def test_the_create_body_carries_every_isolation_field_and_nothing_of_the_bot(
    engine, home, monkeypatch, tmp_path, staged_copy
):
    """Also with DOCKER_HOST pointing elsewhere, OWLIA_HOME and a secret in the bot's environment and
    proxies in the user's docker config: none of them may reach the container."""
    config = tmp_path / "docker-config"
    config.mkdir()
    proxies = {"proxies": {"default": {"httpProxy": "http://proxy.evil:3128"}}}
    (config / "config.json").write_text(json.dumps(proxies))
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("OWLIA_HOME", str(home))
    monkeypatch.setenv("OWLIA_SECRET_TOKEN", "sekrit-123")
    staged = staged_copy(EVIL)
    limits = Limits(memory_mb=128, cpu_seconds=7, max_processes=16)

    async def go() -> Any:
        process = SkillProcess(Docker(engine.url, IMAGE), staged, "main.py", limits, max_message=1 << 20)
        await process.start(10)
        try:
            call = {"name": "read_secrets", "arguments": {"paths": "/etc/hostname"}}
            return await process.request("tools/call", call, timeout=5, on_callback=None)
        finally:
            await process.shutdown()

    seen = asyncio.run(go())["data"]
    body = engine.requests_to("POST", "/containers/create")[0].body
    host = body["HostConfig"]
    assert host["NetworkMode"] == "none" and body["NetworkDisabled"] is True
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd") and not host.get("Privileged")
    assert host["SecurityOpt"] == ["no-new-privileges:true"]
    assert host["PidsLimit"] == 16 and host["Memory"] == host["MemorySwap"] == 128 << 20
    assert host["NanoCpus"] == 1_000_000_000 and host["IpcMode"] == "none" and host["AutoRemove"] is True
    assert {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]} == {
        "nofile": (64, 64),
        "fsize": (16 << 20, 16 << 20),
        "core": (0, 0),
    }
    assert host["LogConfig"] == {"Type": "none", "Config": {}}
    assert body["User"] == "65534:65534" and not body["User"].startswith("0")
    assert host["Tmpfs"] == {"/tmp": f"rw,noexec,nosuid,nodev,size={16 << 20}"}
    assert sorted(b.split(":", 1)[1] for b in host["Binds"]) == ["/owlia/sdk.py:ro", "/skill:ro"]
    assert not host.get("Mounts") and not host.get("Devices") and not host.get("VolumesFrom")
    assert body["Env"] == ["LANG=C.UTF-8", "HOME=/tmp"]
    assert body["StdinOnce"] is True and body["OpenStdin"] is True and body["Tty"] is False
    assert json.loads(body["Cmd"][5]) == limits.rlimits() and body["Cmd"][-1] == "/skill/main.py"
    wire = json.dumps(body)
    for forbidden in ("docker.sock", "/var/run", str(home), "OWLIA_HOME", "sekrit", "proxy.evil", "signer"):
        assert forbidden not in wire
    leaked = {"OWLIA_HOME", "OWLIA_SECRET_TOKEN", "DOCKER_HOST", "DOCKER_CONFIG"} & set(seen["env"])
    assert not leaked and "sekrit" not in json.dumps(seen) and seen["env"]["LANG"] == "C.UTF-8"
    assert "OK" not in seen["/etc/hostname"]  # no /etc: the "image" is /usr only
    assert not engine.requests_to("POST", r"/images/.*")


@settings(max_examples=60, deadline=None)
@given(
    memory_mb=st.integers(16, 8192),
    cpu=st.integers(1, 3600),
    processes=st.integers(1, 4096),
    files=st.integers(1, 1 << 30),
    tmpfs=st.integers(1 << 20, 1 << 30),
)
def test_docker_spec_limits_are_exactly_the_limits_and_no_swap(memory_mb, cpu, processes, files, tmpfs):
    root = Path("/nonexistent-stage")
    limits = Limits(
        memory_mb=memory_mb, cpu_seconds=cpu, max_processes=processes, file_bytes=files, tmpfs_bytes=tmpfs
    )
    spec = docker_spec(IMAGE, Staged(root, root / "skill", root / "sdk.py"), "main.py", limits)
    assert spec["mem_limit"] == spec["memswap_limit"] == memory_mb << 20 and spec["pids_limit"] == processes
    assert all(u["soft"] == u["hard"] for u in spec["ulimits"])
    assert {u["name"]: u["hard"] for u in spec["ulimits"]}["fsize"] == files
    assert spec["tmpfs"]["/tmp"].endswith(f"size={tmpfs}") and "noexec" in spec["tmpfs"]["/tmp"]
    assert json.loads(spec["command"][5]) == limits.rlimits()
    assert all(v["mode"] == "ro" for v in spec["volumes"].values()) and "detach" not in spec


# -- fail closed --------------------------------------------------------------------------------


def test_no_engine_means_no_backend_and_no_skill_run(sockets, staged_copy):
    backend = Docker(f"unix://{sockets}/absent.sock", IMAGE)
    assert "no Docker engine answers" in (backend.unavailable() or "")
    assert "unix://" in (Docker("tcp://127.0.0.1:2375", IMAGE).unavailable() or "")
    with pytest.raises(SandboxUnavailable, match="could not run the skill"):
        asyncio.run(backend.spawn(staged_copy(GAS), "main.py", Limits(), 1 << 20))


@needs_bwrap
def test_a_missing_image_is_refused_and_never_pulled(sockets, staged_copy):
    with FakeDockerEngine(sockets / "docker.sock", images=()) as engine:
        backend = Docker(engine.url, IMAGE)
        reason = backend.unavailable() or ""
        with pytest.raises(SandboxUnavailable, match="No such image"):
            asyncio.run(backend.spawn(staged_copy(GAS), "main.py", Limits(), 1 << 20))
        assert f"the image {IMAGE} is not on the engine" in reason and "never pull" in reason
        assert not engine.requests_to("POST", r"/images/.*") and engine.containers == {}
        assert engine.requests_to("GET", rf"/images/{IMAGE}/json")


@needs_bwrap
@pytest.mark.parametrize("route", ["create", "attach", "start"])
def test_an_engine_error_while_launching_runs_nothing_and_leaves_no_container(
    docker_skills, engine, home, route
):
    engine.fail[route] = 500

    async def scenario(loaded):
        return await loaded.failure("gas_tracker", "gas_price")

    failure = docker_skills(scenario, GAS)
    assert "could not start in its sandbox" in failure and "500" in failure
    assert f"failure of {route}" in failure
    wait_gone(engine)
    assert engine.containers == {} and sandbox_processes() == []
    if route != "create":
        assert len(engine.removed) == 1 and engine.requests_to("DELETE", r"/containers/owlia-skill-\w+")
    assert not engine.requests_to("POST", r"/containers/[^/]+/start") or route == "start"
    assert [r["kind"] for r in audit_records(home)] == ["skill.start_failed"]


@needs_bwrap
def test_a_spawn_cancelled_while_the_engine_is_slow_leaves_no_container(engine, staged_copy):
    engine.start_delay = 0.4
    staged = staged_copy(GAS)

    async def go() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(Docker(engine.url, IMAGE).spawn(staged, "main.py", Limits(), 1 << 20), 0.1)
        deadline = time.monotonic() + 20
        # the launch thread finishes after the cancel: it removes the container it started
        while not engine.requests_to("DELETE", r"/containers/owlia-skill-\w+"):
            assert time.monotonic() < deadline, "the cancelled launch never removed its container"
            await asyncio.sleep(0.02)

    asyncio.run(go())
    wait_gone(engine)
    assert engine.requests_to("POST", r"/containers/[^/]+/start") and len(engine.removed) == 1
    assert engine.requests_to("DELETE", r"/containers/owlia-skill-\w+")  # by us, not only by AutoRemove
    assert engine.containers == {} and sandbox_processes() == []


# -- hostile skills -----------------------------------------------------------------------------


@needs_bwrap
def test_flooding_stdout_kills_and_removes_the_container(docker_skills, engine):
    async def scenario(loaded):
        return await loaded.failure("evil", "flood_stdout")

    assert "larger than" in docker_skills(scenario, EVIL)
    wait_gone(engine)
    assert engine.containers == {} and sandbox_processes() == []
    assert engine.requests_to("POST", r"/containers/[^/]+/kill") and len(engine.removed) == 1


@needs_bwrap
def test_a_100_mb_result_is_refused_without_buffering_it(docker_skills, engine):
    settings = FAST.model_copy(update={"memory_mb": 1024, "call_timeout": 10.0})

    async def scenario(loaded):
        return await loaded.failure("evil", "huge_result")

    assert "larger than 1065536 bytes" in docker_skills(scenario, EVIL, settings=settings)
    wait_gone(engine)
    assert engine.containers == {}


@needs_bwrap
def test_a_silent_skill_hits_the_deadline_and_the_next_call_gets_a_fresh_container(docker_skills, engine):
    async def scenario(loaded):
        started = time.monotonic()
        failed = await loaded.failure("evil", "spin")
        elapsed = time.monotonic() - started
        after = await loaded.result("evil", "write_outside")
        return failed, elapsed, after

    failed, elapsed, after = docker_skills(scenario, EVIL)
    assert "no answer within 1s" in failed and FAST.call_timeout <= elapsed < FAST.call_timeout + 1.5
    assert after["/tmp/ok"] == "OK: written" and not after["/skill/pwned"].startswith("OK")
    assert len(engine.requests_to("POST", "/containers/create")) == 2
    wait_gone(engine)
    assert engine.containers == {} and len(engine.removed) == 2 and sandbox_processes() == []


@needs_bwrap
def test_no_network_in_the_container(docker_skills):
    async def scenario(loaded):
        return await loaded.result("evil", "phone_home", port=1)

    found = docker_skills(scenario, EVIL)
    assert not any(value.startswith("OK") for value in found.values()), found


LATE_FLOOD = (
    """---
name: late_flood
version: 1.0.0
description: answers, then floods the RPC channel while nobody is reading
entrypoint: main.py
tools:
  - {name: answer, level: read, description: answer and keep writing}
---
""",
    """import threading
import time
import owlia_skill
from owlia_skill import tool


def flood():
    time.sleep(0.2)  # after the answer went out
    while True:
        owlia_skill._rpc_out.write(b"A" * 65536)


@tool("answer")
def answer(args):
    threading.Thread(target=flood, daemon=True).start()
    return "ok"
""",
)


def _rss() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]) << 10


@needs_bwrap
def test_output_nobody_reads_stays_in_the_container_and_a_kill_still_ends_it_at_once(
    engine, tmp_path, staged_copy
):
    folder = tmp_path / "late_flood"
    folder.mkdir()
    (folder / "SKILL.md").write_text(LATE_FLOOD[0])
    (folder / "main.py").write_text(LATE_FLOOD[1])
    staged = staged_copy(folder)

    async def go() -> tuple[Any, int, float]:
        process = SkillProcess(Docker(engine.url, IMAGE), staged, "main.py", Limits(), max_message=1 << 20)
        await process.start(10)
        before = _rss()
        call = {"name": "answer", "arguments": {}}
        answer = await process.request("tools/call", call, timeout=5, on_callback=None)
        await asyncio.sleep(1.0)  # the skill writes as fast as it can; the bot reads nothing
        grown = _rss() - before
        started = time.monotonic()
        await process.kill()
        return answer, grown, time.monotonic() - started

    answer, grown, kill_seconds = asyncio.run(go())
    assert answer == {"text": "ok"}
    assert grown < 48 << 20, f"the bot buffered {grown >> 20} MiB of unread output"
    assert kill_seconds < 2
    wait_gone(engine)
    assert engine.containers == {} and sandbox_processes() == []


# -- the demultiplexed stream keeps the pipe's limits --------------------------------------------


async def _through_frames(frames: list[tuple[int, bytes]], limit: int) -> tuple[list[bytes | str], bytes]:
    """Feed frames over a real socket into a ContainerProcess; read stdout line by line as SkillProcess
    does and drain stderr. Its engine is unreachable, so reaping fails quietly, as it should."""
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=ours, limit=65536)
    proc = ContainerProcess(
        Docker("unix:///nonexistent/engine.sock", IMAGE, timeout=0.2), "c", ours, reader, writer, limit
    )
    theirs.sendall(b"".join(FRAME.pack(stream, len(data)) + data for stream, data in frames))
    theirs.close()
    lines: list[bytes | str] = []
    while True:
        try:
            line = await proc.stdout.readline()
        except ValueError:
            lines.append("too long")
            proc.kill()  # as SkillProcess does
            break
        if not line:
            break
        lines.append(line)
    err = await proc.stderr.read()
    await proc.wait()
    return lines, err


def _pipe_lines(data: bytes, limit: int) -> list[bytes | str]:
    async def go() -> list[bytes | str]:
        pipe = asyncio.StreamReader(limit=limit)
        pipe.feed_data(data)
        pipe.feed_eof()
        out: list[bytes | str] = []
        while True:
            try:
                line = await pipe.readline()
            except ValueError:
                return out + ["too long"]
            if not line:
                return out
            out.append(line)

    return asyncio.run(go())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 600), max_size=8),
    fill=st.binary(min_size=1, max_size=8),
    cuts=st.lists(st.integers(1, 97), min_size=1, max_size=6),
    noise=st.binary(max_size=200),
    limit=st.integers(64, 400),
)
@example(sizes=[63, 64, 65], fill=b"x", cuts=[1000], noise=b"", limit=64)  # around the limit itself
def test_demultiplexed_stdout_keeps_the_line_limit_exactly_like_a_pipe(sizes, fill, cuts, noise, limit):
    pattern = fill.replace(b"\n", b"") or b"x"
    data = b"".join((pattern * (size // len(pattern) + 1))[:size] + b"\n" for size in sizes)
    frames: list[tuple[int, bytes]] = []
    at, turn = 0, 0
    while at < len(data):  # cut stdout into frames of varying sizes, stderr frames in between
        size = cuts[turn % len(cuts)]
        frames += [(1, data[at : at + size]), (2, noise[turn % 7 : turn % 7 + 3])]
        at, turn = at + size, turn + 1
    got, err = asyncio.run(_through_frames(frames, limit))
    assert got == _pipe_lines(data, limit)
    if got and got[-1] != "too long":  # stderr is all there unless the reader stopped early
        assert err == b"".join(d for s, d in frames if s == 2)


# -- backend selection --------------------------------------------------------------------------


@needs_bwrap
def test_select_backend_finds_docker_only_where_an_engine_with_the_image_answers(engine, sockets):
    backend, why = select_backend("docker", docker_host=engine.url, docker_image=IMAGE)
    assert isinstance(backend, Docker) and why == "docker" and backend.host == engine.url
    none, reason = select_backend("docker", docker_host=f"unix://{sockets}/down.sock", docker_image=IMAGE)
    assert none is None and reason.startswith("docker: no Docker engine answers")
    none, reason = select_backend("docker", docker_host=engine.url, docker_image="not/here:1")
    assert none is None and "never pull" in reason
    auto, why = select_backend("auto", docker_host=engine.url, docker_image=IMAGE)
    assert isinstance(auto, Bubblewrap) and why == "bubblewrap"
