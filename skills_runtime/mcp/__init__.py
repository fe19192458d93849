"""What of an MCP server runs inside the sandbox: the launcher that sets rlimits and execs the server.

The bot's side (registry, connection, egress, sampling) lives in bot.mcp_servers."""

from pathlib import Path

LAUNCHER = Path(__file__).with_name("launch.py")
