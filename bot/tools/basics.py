"""Two names of the tool layer that code outside it needs early (bot/tools/base.py re-exports both):
the channels tag every inbound message with a ContextKind, and the chain reader, which `/health`
probes, raises a ToolFailure. On their own so that `owlia start` does not import the tool base,
its models and the LLM request types on its way to ready."""

from __future__ import annotations

import enum


class ContextKind(str, enum.Enum):
    """Where a run comes from; it bounds which tools the model may even see."""

    DM = "dm"
    GROUP = "group"
    HEARTBEAT = "heartbeat"
    CRON = "cron"
    SKILL = "skill"
    SCHEDULED = "scheduled"  # a structured job the owner scheduled (a claim): no model, one named tool


class ToolFailure(Exception):
    """Raised by a handler for an expected failure; its message is shown to the model and the user,
    so it must never contain a secret. `for_the_user`: the bot says it in the chat itself, whatever
    the model makes of it (a safety refusal the user must act on); other failures reach the user
    through the model's reply, once."""

    def __init__(self, message: str, *, for_the_user: bool = False) -> None:
        super().__init__(message)
        self.for_the_user = for_the_user
