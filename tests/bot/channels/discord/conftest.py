"""The Discord channel end to end: the real discord.py client against a local Discord (gateway +
REST), a runtime built by build_runtime, the scripted LLM server, and (for transfers) the real
signer on anvil.

`run_discord(bot, scenario)` starts the fake Discord and the channel, waits for the gateway
handshake, runs `await scenario(h)` and shuts everything down; scenarios inject user actions with
`h.server` and read what the bot did from `h.server.calls` / `h.server.messages`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from bot.channels.access import AccessStore
from bot.channels.discord import DiscordChannel
from bot.config import DiscordSettings
from bot.runtime.state import Runtime
from tests.bot.agent.conftest import BotHarness, bot, default_bot_section, llm  # noqa: F401 - fixtures
from tests.fakes.discord_server import BOT_TOKEN, FakeDiscord, Stored

OWNER = 42  # in allow_from
FRIEND_USER = 43  # in allow_from too
STRANGER_USER = 77
GUILD = 500
ROOM = 555  # the allowlisted guild channel
OTHER_ROOM = 556


@dataclass
class Harness:
    server: FakeDiscord
    channel: DiscordChannel
    runtime: Runtime
    access: AccessStore
    bot: BotHarness

    def dm_messages(self, user_id: int = OWNER) -> list[Stored]:
        return self.server.sent_to(self.server.dm_channel(user_id))

    async def reply_in(self, channel_id: int, count: int = 1, timeout: float = 15.0) -> list[Stored]:
        """Wait until `count` messages were posted in the channel and are no longer being streamed."""

        def ready() -> list[Stored] | None:
            sent = self.server.sent_to(channel_id)
            return sent if len(sent) >= count and not any(m.content.endswith(" …") for m in sent) else None

        return await self.server.wait_for(ready, timeout)

    async def first_in(
        self, channel_id: int, match: Callable[[Stored], Any], timeout: float = 15.0
    ) -> Stored:
        """The first message posted in the channel that `match`es (waiting for it)."""
        return await self.server.wait_for(
            lambda: next((m for m in self.server.sent_to(channel_id) if match(m)), None), timeout
        )

    async def response_to(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The bot's callback answer(s) to an injected interaction (waiting for the first)."""
        responses = self.server.interaction_responses
        return await self.server.wait_for(lambda: responses.get(int(event["d"]["id"])))


Scenario = Callable[[Harness], Awaitable[Any]]


def run_discord(
    harness: BotHarness,
    scenario: Scenario,
    *,
    timeout: float = 60.0,
    channel_options: dict[str, Any] | None = None,
    **settings: Any,
) -> None:
    """Run `scenario` against a started channel; `settings` are DiscordSettings fields."""

    async def go() -> None:
        server = await FakeDiscord().start()
        options: dict[str, Any] = {"allow_from": (str(OWNER), str(FRIEND_USER)), "stream_edit_interval": 0.2}
        options.update(settings)
        config = DiscordSettings(api_base=server.api_base, gateway_url=server.gateway_url, **options)
        runtime = harness.runtime()
        access = AccessStore(harness.home / "state" / "access.sqlite3")
        channel = DiscordChannel(runtime.core, config, BOT_TOKEN, access, **(channel_options or {}))
        stop = asyncio.Event()
        task = asyncio.create_task(channel.run(stop))
        try:
            await asyncio.wait(
                {asyncio.ensure_future(server.wait_identified()), task}, return_when=asyncio.FIRST_COMPLETED
            )
            if task.done():
                task.result()
            await scenario(Harness(server, channel, runtime, access, harness))
        finally:
            stop.set()
            await asyncio.wait_for(task, 15)
            await runtime.close()
            await server.stop()
            access.close()

    asyncio.run(asyncio.wait_for(go(), timeout))


@pytest.fixture()
def home_bot(tmp_path, llm) -> BotHarness:  # noqa: F811
    """A bot home without a signer: everything but signing, and fast."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    config = {"chains": [{"id": 31337, "name": "anvil", "rpc_url": "http://127.0.0.1:9", "dev": True}]}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    harness = BotHarness(home, llm, None)
    harness.configure(default_bot_section(llm))
    return harness
