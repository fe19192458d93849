"""The runtime's commands as Discord slash commands (registered with one bulk overwrite).

Each command becomes the same text a user could type ("/balance ETH") and goes through BotCore
like any message, so a slash command and a typed one share dedupe, the session lock, audit and
the signer path. A redelivered interaction is dropped before it is answered (Discord accepts one
response per interaction).
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import discord
from discord import app_commands

if TYPE_CHECKING:
    from bot.channels.discord.channel import DiscordChannel

Run = Callable[[discord.Interaction, str], Awaitable[None]]

SIMPLE = {
    "start": "What I can do",
    "help": "What I can do",
    "new": "Start a fresh conversation (the old one is archived)",
    "status": "Model, tokens used in this chat, signer and chain",
    "model": "The model profiles in use",
    "approvals": "Requests waiting for your companion app",
    "details": "The ids, hashes and rules behind the last signing request",
    "compact": "Summarize older messages to save context",
    "cancel": "Stop the request in progress in this chat",
}


class Tree(app_commands.CommandTree):
    def __init__(self, client: discord.Client, channel: DiscordChannel) -> None:
        super().__init__(client)
        self.channel = channel

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        return self.channel.presses.fresh(interaction)


def _simple(name: str, description: str, run: Run) -> app_commands.Command:
    async def callback(interaction: discord.Interaction) -> None:
        await run(interaction, f"/{name}")

    return app_commands.Command(name=name, description=description, callback=callback)


def build_tree(client: discord.Client, channel: DiscordChannel) -> Tree:
    tree = Tree(client, channel)
    run = channel.on_command
    for name, description in SIMPLE.items():
        tree.add_command(_simple(name, description, run))

    @tree.command(name="balance", description="The wallet's balance (session keys held by the signer)")
    @app_commands.describe(token="A token symbol, e.g. ETH or USDC (default: all)")
    async def balance(interaction: discord.Interaction, token: str | None = None) -> None:
        await run(interaction, shlex.join(["/balance", *([token] if token else [])]))

    @tree.command(name="send", description="Ask the signer to send; it decides (signed / approval / denied)")
    @app_commands.describe(address="0x… recipient", amount="e.g. 0.001eth or 5usdc")
    async def send(interaction: discord.Interaction, address: str, amount: str) -> None:
        await run(interaction, shlex.join(["/send", address, amount]))

    return tree
