"""A real bot runtime (build_runtime) on a temp home, a scripted LLM server and a recording channel.

No signer is needed for most scheduler tests: unattended runs see read tools only. The channel is
a real `Notifier` sender that records what it was asked to send, standing in for Telegram's
`send_message` (the channels have their own wire-level tests).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import load_bot_config
from bot.notify import Notifier
from bot.runtime.assemble import build_runtime
from bot.runtime.llm_pool import Secret
from bot.runtime.state import Runtime
from tests.fakes.llm_server import FakeLLMServer

KEY = "sk-ant-api03-" + "c" * 40


@dataclass
class Outbox:
    """A channel's send(chat, text), recording every message."""

    sent: list[tuple[str, str]] = field(default_factory=list)
    fail: bool = False

    async def send(self, chat: str, text: str) -> None:
        if self.fail:
            raise ConnectionError("channel down")
        self.sent.append((chat, text))

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[tuple[str, str]]:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.sent) < count:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"expected {count} messages, got {self.sent}")
            await asyncio.sleep(0.02)
        return self.sent


@dataclass
class Home:
    path: Path
    llm: FakeLLMServer

    def configure(self, **bot: Any) -> None:
        config = {
            "chains": [{"id": 31337, "name": "anvil", "rpc_url": "http://127.0.0.1:9", "dev": True}],
            "bot": {
                "llm": {
                    "profiles": [{"name": "main", "model": "anthropic/claude-test", "base_url": self.llm.url}]
                },
                **bot,
            },
        }
        (self.path / "config.yaml").write_text(yaml.safe_dump(config))

    def runtime(self) -> Runtime:
        async def lookup(name: str) -> Secret | None:
            return Secret("api_key", KEY) if name == "anthropic" else None

        return build_runtime(self.path, load_bot_config(self.path), lookup=lookup)

    @property
    def state(self) -> Path:
        return self.path / "state"

    def audit_lines(self) -> list[dict]:
        import json

        path = self.path / "logs" / "bot-audit.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="session")
def sdk_imported() -> None:
    """The Anthropic SDK import takes seconds on a loaded machine: pay it once, outside timed waits."""
    import importlib

    importlib.import_module("bot.llm.anthropic_provider")


@pytest.fixture()
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture()
def home(tmp_path, llm, sdk_imported) -> Home:
    root = tmp_path / "home"
    root.mkdir(mode=0o700)
    made = Home(root, llm)
    made.configure()
    return made


def notifier_with(
    outbox: Outbox, default: str | None = "telegram:100", state: Path | None = None
) -> Notifier:
    notifier = Notifier(default, state)
    notifier.register("telegram", outbox.send)
    return notifier
