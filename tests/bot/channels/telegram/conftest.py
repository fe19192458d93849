"""A whole bot behind our own Bot API client, talking to a local Telegram Bot API server.

`TelegramHarness.serve(scenario)` builds the runtime exactly as `owlia start` does (build_runtime,
the home's access store), runs TelegramChannel against the fake Telegram server until the scenario
returns, then stops it the way `owlia start` does (set the stop event, await run()). The LLM is the
scripted fake speaking the Anthropic wire protocol; with the `bot` fixture the signer is real and
the chain is anvil.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.channels.access import AccessStore, open_access
from bot.channels.telegram import TelegramChannel
from bot.config import TelegramSettings, load_bot_config
from bot.runtime.state import Runtime
from tests.bot.agent.conftest import BotHarness, attach_bot, default_bot_section
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.telegram_server import FakeTelegramServer

OWNER = 1001  # in allow_from
STRANGER = 2002
OTHER = 3003  # also allowed, to prove buttons are bound to one user
GROUP = -5005


@dataclass
class Live:
    """What a scenario gets: the running channel, its runtime and the two fakes."""

    channel: TelegramChannel
    runtime: Runtime
    tg: FakeTelegramServer
    llm: FakeLLMServer
    access: AccessStore

    def replies(self, chat_id: int = OWNER) -> list[str]:
        return [m.text for m in self.tg.chat(chat_id)]

    async def reply_count(self, n: int, chat_id: int = OWNER, timeout: float = 10.0) -> list[str]:
        await self.tg.until(lambda: len(self.tg.chat(chat_id)) >= n, timeout)
        return self.replies(chat_id)


@dataclass
class TelegramHarness:
    bot: BotHarness
    tg: FakeTelegramServer
    channel_options: dict[str, Any] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.bot.home

    def settings(self, **override: Any) -> TelegramSettings:
        values: dict[str, Any] = {
            "api_base": self.tg.url,
            "allow_from": (str(OWNER), str(OTHER)),
            "stream_edit_interval": 0.2,
        }
        values.update(override)
        return TelegramSettings(**values)

    def serve(
        self,
        scenario: Callable[[Live], Awaitable[None]],
        *,
        settings: TelegramSettings | None = None,
        timeout: float = 60.0,
        **options: Any,
    ) -> None:
        async def go() -> None:
            runtime = self.bot.runtime()
            access = open_access(self.home, load_bot_config(self.home).bot.pairing)
            kwargs = {
                "poll_timeout": 1,
                "typing_interval": 0.5,
                "hold": 0.0,
                "shutdown_grace": 2.0,
                **self.channel_options,
                **options,
            }
            channel = TelegramChannel(
                runtime.core, settings or self.settings(), self.tg.token, access, **kwargs
            )
            stop = asyncio.Event()
            task = asyncio.create_task(channel.run(stop))
            try:
                ready = asyncio.create_task(channel.ready.wait())
                await asyncio.wait({ready, task}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
                if task.done():
                    task.result()
                assert channel.ready.is_set(), "channel did not come up"
                await scenario(Live(channel, runtime, self.tg, self.bot.llm, access))
            finally:
                stop.set()
                await asyncio.wait_for(task, 15)
                await runtime.close()
                access.close()

        asyncio.run(asyncio.wait_for(go(), timeout))


@pytest.fixture()
def tg():
    with FakeTelegramServer() as server:
        yield server


@pytest.fixture()
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture()
def telegram(tmp_path, tg, llm) -> TelegramHarness:
    """No signer: chat, commands, pairing, write tools."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(yaml.safe_dump({"bot": default_bot_section(llm)}))
    return TelegramHarness(BotHarness(home, llm, None), tg)


@pytest.fixture()
def telegram_signer(stack, tg, llm) -> TelegramHarness:
    """A real signer with a funded session key on anvil behind the bot."""
    stack.funded_session_key()
    return TelegramHarness(attach_bot(stack, llm), tg)
