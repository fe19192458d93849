"""What a chat shows when a tool fails: one bounded line, with anything secret-shaped redacted.

A failed tool's message can carry text from outside (a node's error, a fetched page, a skill's
own words), so every channel shows it through here. It is redacted before it is cut: cutting first
could leave the head of a key too short to be recognized as one, and that head would be shown.
"""

from __future__ import annotations

from bot.security.redact import redact
from bot.tools.executor import ToolEvent


def failure_note(event: ToolEvent, limit: int) -> str | None:
    """`name: outcome: message` for a finished tool that failed; None for anything else."""
    output = event.output
    if event.phase != "finished" or output is None or not output.is_error:
        return None
    note = redact(f"{event.name}: {event.outcome}: {output.content}")
    return note if len(note) <= limit else note[: limit - 1] + "…"
