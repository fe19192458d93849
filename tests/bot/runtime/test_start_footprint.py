"""`owlia start` stays light until it is ready: a real `owlia start` process (Telegram against the
local Bot API server, the control plane on, an anthropic profile against the local LLM server).

Before ready it may import the Telegram client (our own, on httpx) and what /health probes, but no
provider SDK, no tools, memory, scheduler or agent loop, no tool base or LLM request types (all
imported just after ready, in the background), no chat library (python-telegram-bot included), no
web framework (the control plane is its own small server), not typer (`owlia start` goes around the
command tree), not httpx's command line (rich, pygments) and nothing a configured feature does not
need; its resident memory at ready stays under a ceiling with some headroom (45 MB here under
-X importtime, 49 with typer and the tool base, 63 with python-telegram-bot, 76 before that; aiogram
alone had pushed it past 200 MB). Checked by what the process imports (`python -X importtime`, stable) and
by RSS, not by wall time (noisy on a shared machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from bot.workspace import create_workspace
from tests.bot.agent.conftest import FAKE_KEYS, Reply, default_bot_section, llm  # noqa: F401 - fixture
from tests.fakes.telegram_server import TOKEN, FakeTelegramServer
from tests.processes import stop

ROOT = Path(__file__).resolve().parents[3]
READY = "owlia: running with telegram"
NOT_BEFORE_READY = (
    "anthropic",
    "openai",
    "aiogram",
    "telegram",
    "discord",
    "docker",
    "mcp",
    "jsonschema",
    "web3",
    "playwright",
    "nacl",
    "fastapi",
    "starlette",
    "uvicorn",
    "aiohttp",
    "apscheduler",
    "rich",
    "pygments",
    "typer",
)
# What /health does not probe loads just after ready (bot/runtime/launcher.py AFTER_READY).
AFTER_READY = (
    "bot.runtime.assemble",
    "bot.channels.core",
    "bot.agent.loop",
    "bot.tools.catalog",
    "bot.tools.executor",
    "bot.skills.tools",
    "bot.mcp_servers.tools",
    "bot.memory",
    "bot.runtime.scheduler",
    "bot.channels.telegram.sink",
    "bot.tools.base",
    "bot.llm.types",
    "bot.llm.failover",
    "bot.tools.provenance",
)
NEVER = ("pydantic.plugin._loader", "importlib.metadata", "typer._adapters", "html.entities")
RSS_CEILING_MB = 52
USER = 4242


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _home(tmp_path: Path, llm_server, api_base: str) -> Path:  # noqa: F811 - the fixture's name
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    create_workspace(home / "workspace")
    config = {
        "chains": [{"id": 31337, "name": "anvil", "rpc_url": "http://127.0.0.1:9", "dev": True}],
        "bot": default_bot_section(
            llm_server,
            gateway={"port": 0},
            channels={"telegram": {"api_base": api_base, "allow_from": [str(USER)]}},
        ),
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    return home


def _top_level(line: str) -> str | None:
    """The top-level package an `-X importtime` line names."""
    if not line.startswith("import time:") or "|" not in line:
        return None
    name = line.rsplit("|", 1)[1].strip()
    return None if name == "imported package" else name.split(".")[0]


def test_owlia_start_is_light_until_ready_and_still_answers(tmp_path, llm) -> None:  # noqa: F811
    llm.enqueue(Reply(text=["pong"]))
    with FakeTelegramServer() as tg:
        home = _home(tmp_path, llm, tg.url)
        env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEYS["anthropic"], "TELEGRAM_BOT_TOKEN": TOKEN}
        proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "bot.cli", "--home", str(home), "start"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stderr is not None
            before: set[str] = set()
            modules: set[str] = set()
            seen: list[str] = []
            for line in proc.stderr:
                if READY in line:
                    break
                seen.append(line)
                if (package := _top_level(line)) is not None:
                    before.add(package)
                    modules.add(line.rsplit("|", 1)[1].strip())
            else:
                raise AssertionError("owlia start never got ready:\n" + "".join(seen[-40:]))
            rss = _rss_mb(proc.pid)
            rest: list[str] = []  # keep reading: a full stderr pipe would stall the bot
            threading.Thread(target=lambda: rest.extend(proc.stderr), daemon=True).start()  # type: ignore[arg-type]
            assert "httpx" in before and "bot" in before  # the probe sees what the process imports
            assert not before & set(NOT_BEFORE_READY), sorted(before & set(NOT_BEFORE_READY))
            assert not modules & set(AFTER_READY), sorted(modules & set(AFTER_READY))
            # plugins are off: pydantic's loader and the package metadata reader it imports stay out; and
            # neither typer's adapters nor html's entity table (the channel escapes with its own table)
            assert not modules & set(NEVER), sorted(modules & set(NEVER))
            print(f"{rss:.1f} MB resident at ready")
            assert rss < RSS_CEILING_MB, f"{rss:.1f} MB resident at ready"
            tg.message(USER, "ping")
            deadline = time.monotonic() + 30
            while not [m for m in tg.chat(USER) if m.text == "pong"]:
                assert proc.poll() is None and time.monotonic() < deadline, "no reply:\n" + "".join(
                    rest[-40:]
                )
                time.sleep(0.05)
        finally:
            stop(proc)
