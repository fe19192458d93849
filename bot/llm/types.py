"""The one message format the agent speaks, whatever provider answers.

Providers differ in how they spell tool calls, tool results and stop reasons; the agent must not
care. Everything above the provider adapters uses these frozen dataclasses, and each adapter maps
them to and from its wire format's native shapes. Tool results travel as user-role parts (Anthropic's
model); the OpenAI adapter turns them into role "tool" messages.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.workspace.prompt import wrap_untrusted
from policies.kernel import safejson


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ToolCall:
    """A tool invocation requested by the model.

    `error` is set when the model's arguments could not be parsed as a JSON object; `arguments` is
    then `{}` and the agent should report the error back to the model instead of running the tool.
    """

    id: str
    name: str
    arguments: Mapping[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """The outcome of a tool call, sent back to the model.

    `untrusted` (the default) marks content that came from outside (web pages, chain data, other
    people's messages): adapters fence it so the model can tell data from instructions.
    """

    tool_call_id: str
    content: str
    is_error: bool = False
    untrusted: bool = True


Part = TextPart | ToolCall | ToolResult


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"message role must be 'user' or 'assistant', not {self.role!r}")
        for part in self.parts:
            if isinstance(part, ToolCall) and self.role != "assistant":
                raise ValueError("tool calls belong in assistant messages")
            if isinstance(part, ToolResult) and self.role != "user":
                raise ValueError("tool results belong in user messages")

    @classmethod
    def user(cls, *parts: Part | str) -> Message:
        return cls("user", tuple(TextPart(p) if isinstance(p, str) else p for p in parts))

    @classmethod
    def assistant(cls, *parts: Part | str) -> Message:
        return cls("assistant", tuple(TextPart(p) if isinstance(p, str) else p for p in parts))


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model; `parameters` is a JSON schema for its arguments object."""

    name: str
    description: str
    parameters: Mapping[str, Any]


class StopReason(enum.Enum):
    END = "end"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    ERROR = "error"


@dataclass(frozen=True)
class Usage:
    """`input_tokens` counts the whole prompt, cached or not; `cache_read_tokens` of it were served
    from the provider's prompt cache, and `cache_write_tokens` were written to it (Anthropic bills
    those apart)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class Request:
    """One model turn. `model` is the provider's own model name (no `provider/` prefix); the
    failover router fills it in from each profile."""

    messages: tuple[Message, ...]
    model: str = ""
    system: str = ""
    note: str = ""
    """What changes every turn (the current time): sent after the last cached block of the latest
    message, so the tools, the system prompt and the conversation before it stay a cached prefix."""
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096


# -- stream events ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallReady:
    call: ToolCall


@dataclass(frozen=True)
class Finished:
    """Last event of a stream. `profile`/`fallback_used` are filled in by the failover router."""

    stop_reason: StopReason
    usage: Usage
    model: str
    profile: str = ""
    fallback_used: bool = False


StreamEvent = TextDelta | ToolCallReady | Finished


@dataclass(frozen=True)
class Completion:
    """A whole answer, aggregated from a stream."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: StopReason
    usage: Usage
    model: str
    profile: str = ""
    fallback_used: bool = False

    def as_message(self) -> Message:
        """The assistant message to append to the conversation history."""
        parts: list[Part] = [TextPart(self.text)] if self.text else []
        parts.extend(self.tool_calls)
        return Message("assistant", tuple(parts))


def render_tool_result(result: ToolResult) -> str:
    """The text a provider receives for a tool result: untrusted content is fenced exactly as the
    system prompt describes (bot.workspace.prompt), and the content cannot close the fence early."""
    if not result.untrusted:
        return result.content
    return wrap_untrusted("tool_result", result.content)


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Assembled tool-argument JSON -> (arguments, error). Never raises: a model that emits bad
    JSON gets told so by the agent, it does not crash the turn."""
    if not raw.strip():
        return {}, None
    try:
        value = safejson.loads(raw)
    except safejson.TooDeep as exc:
        return {}, f"tool arguments are not valid JSON ({exc})"
    except json.JSONDecodeError as exc:
        return {}, f"tool arguments are not valid JSON ({exc.msg} at position {exc.pos})"
    except ValueError as exc:  # any other refusal of the text (e.g. one safejson adds): said, not raised
        return {}, f"tool arguments are not valid JSON ({exc})"
    if not isinstance(value, dict):
        return {}, f"tool arguments must be a JSON object, got {type(value).__name__}"
    return value, None
