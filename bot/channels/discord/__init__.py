"""Discord: DMs by default, guild channels when configured, via discord.py."""

from bot.channels.discord.channel import DiscordChannel, intents_for

__all__ = ["DiscordChannel", "intents_for"]
