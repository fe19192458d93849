"""Channels: where messages come from and replies go (console, Telegram, Discord), and BotCore
(core.py), the front door every channel hands its messages to."""
