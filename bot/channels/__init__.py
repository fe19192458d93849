"""Channels: where messages come from and replies go (console here; Telegram and Discord later)."""
