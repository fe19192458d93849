"""One message per action: the signer's card is the answer, the model's words around it are not.

A run that reaches the signer ends, for the person reading, with the signer's card (its own
reading of what was signed, in bot/tools/signer_words): text the model writes after it would say
the same again, so it is kept in the session but not shown. A failed tool is not announced on its
own either: its message is worded for people and the model's reply carries it, once. The
exception is a refusal the user must act on (a secret in the arguments, an MCP tool changed since it
was approved: `for_the_user`): the bot says that itself, whatever the model says. Every
channel's reply goes through this (BotCore wraps the sink), so they all count messages alike.
"""

from __future__ import annotations

from bot.agent.sink import ReplySink
from bot.channels.notes import signer_outcome
from bot.tools.executor import ToolEvent


class OneMessagePerAction:
    def __init__(self, inner: ReplySink) -> None:
        self.inner = inner
        self.settled = False  # the signer's card was shown: the model has nothing left to add
        self.shown = ""  # the model's text passed on to the channel
        self.streamed = ""  # all of it

    async def text(self, delta: str) -> None:
        self.streamed += delta
        if not self.settled:
            self.shown += delta
            await self.inner.text(delta)

    async def notice(self, text: str) -> None:
        await self.inner.notice(text)

    async def tool_event(self, event: ToolEvent) -> None:
        if signer_outcome(event) is not None:
            self.settled = True
            await self.inner.tool_event(event)
        elif (
            event.phase == "finished"
            and event.output is not None
            and event.output.is_error
            and not event.output.for_the_user
        ):
            return  # the reply says it, in the tool's own words (a command's reply is that message)
        else:
            await self.inner.tool_event(event)

    async def confirm(self, prompt: str, timeout: float) -> bool:
        return await self.inner.confirm(prompt, timeout)

    async def done(self, text: str) -> None:
        await self.inner.done(self.shown if self.settled and text == self.streamed else text)
