"""What a chat shows when a tool finishes: a sign tool's outcome as the signer's own card, a failure
as one bounded line with anything secret-shaped redacted; every channel decides through here.

A failed tool's message can carry text from outside (a node's error, a fetched page, a skill's
own words), so every channel shows it through here. It is redacted before it is cut: cutting first
could leave the head of a key too short to be recognized as one, and that head would be shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.security.redact import redact
from bot.tools.base import Level
from bot.tools.executor import ToolEvent


def signer_outcome(event: ToolEvent) -> Mapping[str, Any] | None:
    """The signer's outcome a finished sign tool carries (what the channel renders as the signer's
    card, never the model's account of it); None for anything else, a failure without one included."""
    output = event.output
    if event.phase != "finished" or output is None or event.level is not Level.SIGN or not output.data:
        return None
    return output.data


def failure_note(event: ToolEvent, limit: int) -> str | None:
    """`name: outcome: message` for a finished tool that failed; None for anything else."""
    output = event.output
    if event.phase != "finished" or output is None or not output.is_error:
        return None
    note = redact(f"{event.name}: {event.outcome}: {output.content}")
    return note if len(note) <= limit else note[: limit - 1] + "…"
