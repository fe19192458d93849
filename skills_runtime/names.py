"""How a skill's tools are named to the model: one prefix, so the bot tells skills' tools from its own."""

from __future__ import annotations

SKILL_TOOL_PREFIX = "skill_"
