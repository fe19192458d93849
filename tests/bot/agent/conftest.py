"""A whole bot on a real signer and anvil, talking to a scripted LLM server over the real SDKs.

Each `chat(...)` call builds the runtime exactly as `owlia chat` does (build_runtime), feeds the
lines to the real console channel, and returns what the console printed. Only the credentials are
handed in directly (the `owlia auth` store has its own tests).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.channels.console import ConsoleChannel
from bot.config import load_bot_config
from bot.runtime.assemble import build_runtime
from bot.runtime.llm_pool import Secret
from bot.runtime.state import Runtime
from policies.kernel.aio import run as run_loop
from policies.kernel.files import ensure_private_dir, write_private_file
from tests.fakes.llm_server import FakeLLMServer, Reply, ScriptedToolCall

FAKE_KEYS = {"anthropic": "sk-ant-api03-" + "t" * 40, "openai": "sk-proj-" + "o" * 40}


def call(name: str, args: dict[str, Any], call_id: str | None = None) -> ScriptedToolCall:
    import json

    text = json.dumps(args)
    cut = max(1, len(text) // 2)
    return ScriptedToolCall(
        call_id or f"toolu_{name}_{abs(hash(text)) % 10**8}", name, (text[:cut], text[cut:])
    )


@dataclass
class BotHarness:
    home: Path
    llm: FakeLLMServer
    stack: Any

    def configure(self, bot: dict[str, Any]) -> None:
        path = self.home / "config.yaml"
        config = yaml.safe_load(path.read_text())
        config["bot"] = bot
        path.write_text(yaml.safe_dump(config))

    def chat(self, *lines: str, setup=None) -> str:
        """Run the console channel over these input lines with a fresh runtime; return its output."""
        out = io.StringIO()
        self.chat_to(out, *lines, setup=setup)
        return out.getvalue()

    def chat_to(self, out: Any, *lines: str, setup=None) -> None:

        async def go() -> None:
            runtime = self.runtime()
            try:
                if setup is not None:
                    setup(runtime)
                await ConsoleChannel(
                    runtime.core,
                    stdin=io.StringIO("".join(f"{x}\n" for x in lines)),
                    stdout=out,
                    peer="tester",
                ).run()
            finally:
                await runtime.close()

        run_loop(asyncio.wait_for(go(), 120))  # the loop `owlia chat` runs on

    def runtime(self) -> Runtime:
        async def lookup(name: str) -> Secret | None:
            return Secret("api_key", FAKE_KEYS[name]) if name in FAKE_KEYS else None

        return build_runtime(self.home, load_bot_config(self.home), lookup=lookup)

    def audit_lines(self) -> list[dict]:
        import json

        path = self.home / "logs" / "bot-audit.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []

    def requests(self) -> Sequence[Any]:
        return self.llm.requests


def default_bot_section(server: FakeLLMServer, **extra: Any) -> dict[str, Any]:
    section = {
        "llm": {"profiles": [{"name": "main", "model": "anthropic/claude-test", "base_url": server.url}]},
        "prices": {"static": {"ETH": "3000"}},
    }
    section.update(extra)
    return section


class RecordingOut(io.StringIO):
    """A console output that remembers each write, to prove text arrives in pieces."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


@pytest.fixture()
def llm():
    with FakeLLMServer() as server:
        yield server


def attach_bot(stack, server: FakeLLMServer, **extra: Any) -> BotHarness:
    """Give the stack's home a bot: a sign-scope client token and a `bot:` config section."""
    secrets = ensure_private_dir(stack.home / "secrets")
    write_private_file(secrets / "signer.token", stack.client_token("bot").encode())
    harness = BotHarness(stack.home, server, stack)
    harness.configure(default_bot_section(server, **extra))
    return harness


@pytest.fixture()
def bot(stack, llm) -> BotHarness:
    stack.funded_session_key()
    return attach_bot(stack, llm)


__all__ = ["BotHarness", "Reply", "attach_bot", "call", "default_bot_section"]
