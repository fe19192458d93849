"""The bot's LLM layer: one internal message format, an adapter per provider, profile failover.

Unprivileged by design: nothing here can sign; the signer never imports this package.
"""

from bot.llm.errors import AllProfilesUnavailable, LLMError, ProfileFailed, ProviderError, StreamInterrupted
from bot.llm.failover import FailoverRouter, Profile, cooldown_seconds
from bot.llm.models import ModelRef, UnknownModel, resolve_model
from bot.llm.providers import make_profile, make_provider
from bot.llm.types import (
    Completion,
    Finished,
    Message,
    Request,
    StopReason,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallReady,
    ToolResult,
    ToolSpec,
    Usage,
)

__all__ = [
    "AllProfilesUnavailable", "Completion", "FailoverRouter", "Finished", "LLMError", "Message", "ModelRef",
    "Profile", "ProfileFailed", "ProviderError", "Request", "StopReason", "StreamEvent", "StreamInterrupted",
    "TextDelta", "TextPart", "ToolCall", "ToolCallReady", "ToolResult", "ToolSpec", "UnknownModel", "Usage",
    "cooldown_seconds", "make_profile", "make_provider", "resolve_model",
]
