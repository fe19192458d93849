"""The agent loop: one inbound message -> model rounds -> tool calls -> one reply."""
