"""What a tool is: a name, a tier, a pydantic argument model and an async handler.

The tier decides how the executor treats a call, never the tool itself: `read` tools run at once
(in parallel), `write` tools need the user's confirmation in the same chat, `sign` tools only build
an intent for the signer, whose decision is final. A tool never sees another tool's arguments and
never talks to the user directly; it returns a ToolOutput and the executor does the rest.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from bot.llm.types import ToolSpec
from bot.tools.basics import ContextKind, ToolFailure  # re-exported: every tool module names them from here
from bot.tools.chain_reader import redact_urls
from bot.tools.provenance import Provenance
from bot.tools.signer_words import SIGNER_DOWN, humane
from signer.wire.exchange import SignerUnavailable

if TYPE_CHECKING:
    from bot.tools.services import Services
    from signer.wire.client import SignerClient


class Level(str, enum.Enum):
    READ = "read"
    WRITE = "write"
    SIGN = "sign"


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown fields are refused, so a model cannot smuggle
    in a 'note to the signer' that some later code might trust."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoArgs(ToolArgs):
    pass


A = TypeVar("A", bound=ToolArgs)


@dataclass(frozen=True)
class ToolOutput:
    """A tool's answer. `content` goes to the model (fenced when `untrusted`); `data` is the
    structured form for channels and the audit log (e.g. the signer's outcome)."""

    content: str
    untrusted: bool = True
    is_error: bool = False
    data: Mapping[str, Any] | None = None
    for_the_user: bool = False  # shown in the chat by the bot itself, not only through the model


@dataclass
class ToolContext:
    """Everything a handler may use for one call; built by the executor per run."""

    session_key: str
    channel: str
    peer: str
    kind: ContextKind
    services: Services
    run_id: str = ""
    call_id: str = ""
    provenance: Provenance = field(default_factory=Provenance)
    """The addresses the user wrote; any other recipient is flagged to the signer."""
    shown_in_chat: bool = False
    """A chat shows this run's tool results as they come (the signer's card): no second notice needed."""

    def signer_failure(self, exc: Exception, doing: str) -> ToolFailure:
        """A signer error as the user and the model read it: a signer that is down is said in words
        with the command that starts it, never with the host's socket path."""
        if isinstance(exc, SignerUnavailable):
            return ToolFailure(SIGNER_DOWN)
        return ToolFailure(f"{doing}: {humane(redact_urls(getattr(exc, 'message', str(exc))))}")

    def require_signer(self, consequence: str) -> SignerClient:
        """The signer client, or a ToolFailure saying what cannot be done without one."""
        if self.services.signer is None:
            raise ToolFailure(
                f"the bot has no usable signer client token, so {consequence} (`/status` tells the "
                "user why and what to do)"
            )
        return self.services.signer

    @property
    def source(self) -> str:
        """How the signer should label requests from this run; unattended runs are stricter."""
        return {
            ContextKind.HEARTBEAT: "heartbeat",
            ContextKind.CRON: "heartbeat",
            ContextKind.SCHEDULED: "heartbeat",  # unattended: the policy's `sources.heartbeat` decides
            ContextKind.SKILL: "skill",
        }.get(self.kind, "agent")


Handler = Callable[[ToolContext, A], Awaitable[ToolOutput]]
Confirmation = Callable[[A], str]
ConfirmationNote = Callable[[ToolContext, A], Awaitable[str | None]]


@dataclass(frozen=True)
class Tool(Generic[A]):
    name: str
    description: str
    level: Level
    args: type[A]
    handler: Handler[A]
    timeout: float = 30.0
    confirmation: Confirmation[A] | None = None
    """For `write` tools: the exact text the user is asked to confirm (what will happen)."""
    confirmation_note: ConfirmationNote[A] | None = None
    """What the user should know from the bot's state (e.g. which saved contact this address imitates)."""

    @cached_property
    def _spec(self) -> ToolSpec:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(self.name, self.description, schema)

    def spec(self) -> ToolSpec:
        """The JSON schema the model sees; built once (pydantic's generator is slow per message)."""
        return self._spec

    def confirmation_text(self, args: A) -> str:
        if self.confirmation is not None:
            return self.confirmation(args)
        shown = ", ".join(f"{k}={v!r}" for k, v in args.model_dump().items())
        return f"{self.name}({shown})"


def tool(
    name: str,
    level: Level,
    args: type[A],
    *,
    description: str,
    timeout: float = 30.0,
    confirmation: Confirmation[A] | None = None,
    confirmation_note: ConfirmationNote[A] | None = None,
) -> Callable[[Handler[A]], Tool[A]]:
    """Decorator: turn an async handler into a Tool."""

    def wrap(handler: Handler[A]) -> Tool[A]:
        return Tool(name, description.strip(), level, args, handler, timeout, confirmation, confirmation_note)

    return wrap
