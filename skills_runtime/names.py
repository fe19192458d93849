"""How third-party tools are named to the model: one prefix per kind (skills, MCP servers), so the bot tells them from its own."""

from __future__ import annotations

SKILL_TOOL_PREFIX = "skill_"
MCP_TOOL_PREFIX = "mcp_"
THIRD_PARTY_PREFIXES = (SKILL_TOOL_PREFIX, MCP_TOOL_PREFIX)
"""Tools whose names and descriptions a third party wrote (fenced as untrusted in the prompt)."""
