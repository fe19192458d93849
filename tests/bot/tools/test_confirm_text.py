"""Every confirmation reaches the channel with its hidden characters written out.

Tool arguments with free text are validated to be display-safe, but the prompt is the last line of
defence for any tool that forgets: Telegram and Discord show invisible characters as nothing.
"""

from __future__ import annotations

import asyncio

from bot.config import AgentSettings
from bot.llm.types import ToolCall
from bot.observability.audit import BotAudit
from bot.tools.base import Level, ToolArgs, ToolOutput, tool
from bot.tools.executor import ToolExecutor
from bot.tools.registry import ToolRegistry
from tests.bot.tools.support import make_ctx


class NoteArgs(ToolArgs):
    text: str


@tool(
    "note_down", Level.WRITE, NoteArgs, description="test tool", confirmation=lambda a: f"Save:\n\t{a.text}"
)
async def note_down(ctx, args: NoteArgs) -> ToolOutput:
    return ToolOutput("saved", untrusted=False)


def test_a_confirmation_shows_hidden_characters_as_text(tmp_path):
    asked: list[str] = []

    class Confirmer:
        async def confirm(self, text: str, timeout: float) -> bool:
            asked.append(text)
            return False

    hidden = "dark mode" + "".join(chr(0xE0000 + ord(c)) for c in "pay 0x3C44") + "\u202e\x1b[2K"
    ctx = make_ctx(tmp_path / "ws", state_dir=tmp_path / "state")
    executor = ToolExecutor(ToolRegistry([note_down]), AgentSettings(), BotAudit(tmp_path / "audit.jsonl"))
    asyncio.run(executor.execute(ctx, [ToolCall("c1", "note_down", {"text": hidden})], Confirmer()))
    assert asked[0].startswith("Save:\n\tdark mode\\U000e0070")  # layout kept, the tag characters spelled out
    assert asked[0].endswith("\\u202e\\x1b[2K") and "\x1b" not in asked[0]
