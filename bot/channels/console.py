"""The console channel: a real channel on stdin/stdout, for `owlia chat` and `owlia up`.

It is a channel like Telegram, not a test shim: messages go through BotCore (dedupe, session lock,
commands, agent), replies stream as they arrive, `write` tools ask "y/N" on the same terminal, and
sign outcomes are printed from the signer's own summary. One reader thread feeds stdin lines into
the event loop, so a confirmation simply takes the next line typed. Everything printed has its
control characters written out (newlines and tabs kept): a model's reply or a fetched page must
not be able to move the cursor and rewrite a signer card already on the screen.
"""

from __future__ import annotations

import asyncio
import getpass
import sys
import threading
import time
import uuid
from typing import TextIO

from bot.channels.base import Inbound
from bot.channels.core import BotCore
from bot.channels.notes import failure_note, signer_outcome
from bot.tools.executor import ToolEvent
from bot.tools.signer_words import card_text
from policies.kernel.text import visible

QUIT = frozenset({"/quit", "/exit", ":q"})
LAYOUT = "\n\t"  # the only control characters printed as themselves
ERROR_CHARS = 2000  # a failed tool's message, as shown in the terminal


class LineReader:
    """Lines from a blocking stream, delivered into asyncio; None means end of input."""

    def __init__(self, stream: TextIO, loop: asyncio.AbstractEventLoop) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._thread = threading.Thread(
            target=self._pump, args=(stream, loop), daemon=True, name="console-stdin"
        )
        self._thread.start()

    def _pump(self, stream: TextIO, loop: asyncio.AbstractEventLoop) -> None:
        try:
            try:
                for line in stream:
                    loop.call_soon_threadsafe(self.queue.put_nowait, line.rstrip("\r\n"))
            finally:
                loop.call_soon_threadsafe(self.queue.put_nowait, None)
        except RuntimeError:  # the loop closed first (chat ended, e.g. on a damaged session): nobody reads
            pass

    async def next(self, timeout: float | None = None) -> str | None:
        return await asyncio.wait_for(self.queue.get(), timeout)


class ConsoleSink:
    """One reply on the console."""

    def __init__(self, out: TextIO, reader: LineReader) -> None:
        self.out = out
        self.reader = reader
        self.started = False
        self.eof = False

    def _write(self, text: str) -> None:
        self.out.write(visible(text, keep=LAYOUT))
        self.out.flush()

    async def text(self, delta: str) -> None:
        if not self.started:
            self._write("owlia> ")
            self.started = True
        self._write(delta)

    async def notice(self, text: str) -> None:
        self._write(("\n" if self.started else "") + f"[note] {text}\n")
        self.started = False

    async def tool_event(self, event: ToolEvent) -> None:
        if event.phase == "started":
            return  # what follows says it: a write's confirmation, a sign tool's card, the reply
        if (outcome := signer_outcome(event)) is not None:
            self._write(("\n" if self.started else "") + render_signer_card(dict(outcome)))
            self.started = False
        elif (note := failure_note(event, ERROR_CHARS)) is not None:
            self._write(f"[tool] {note}\n")

    async def confirm(self, prompt: str, timeout: float) -> bool:
        self._write(("\n" if self.started else "") + f"[confirm] {prompt}\nAllow this? [y/N] ")
        self.started = False
        try:
            answer = await self.reader.next(timeout)
        except asyncio.TimeoutError:
            self._write("\n(no answer: not allowed)\n")
            return False
        if answer is None:
            self.eof = True
            return False
        return answer.strip().lower() in ("y", "yes")

    async def done(self, text: str) -> None:
        if self.started:
            self._write("\n")
        self.started = False


def render_signer_card(data: dict) -> str:
    """The signer's outcome in the words every channel uses (bot/tools/signer_words)."""
    return card_text(data) + "\n"


class ConsoleChannel:
    name = "console"

    def __init__(
        self,
        core: BotCore,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        peer: str | None = None,
    ) -> None:
        self.core = core
        self.stdin = stdin or sys.stdin
        self.out = stdout or sys.stdout
        self.peer = peer or _user()

    async def run(self, banner: str = "") -> None:
        reader = LineReader(self.stdin, asyncio.get_running_loop())
        if banner:
            self.out.write(banner.rstrip("\n") + "\n")
        while True:
            self.out.write("you> ")
            self.out.flush()
            line = await reader.next()
            if line is None or line.strip().lower() in QUIT:
                self.out.write("\nbye\n")
                self.out.flush()
                return
            if not line.strip():
                continue
            sink = await self._send(reader, line)
            if sink.eof:
                return

    async def one(self, text: str) -> None:
        """Handle a single message (for `owlia chat -m`), printing as it goes."""
        await self._send(LineReader(self.stdin, asyncio.get_running_loop()), text)

    async def _send(self, reader: LineReader, text: str) -> ConsoleSink:
        """One message through BotCore; replies the agent did not stream (commands) are printed here."""
        sink = ConsoleSink(self.out, reader)
        handled = await self.core.handle(
            Inbound(self.name, self.peer, uuid.uuid4().hex, text, received_at=time.time()), sink
        )
        if handled.status in ("command", "no_llm") and handled.reply:
            self.out.write(visible(handled.reply.rstrip("\n"), keep=LAYOUT) + "\n")
        self.out.flush()
        return sink


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - containers without a passwd entry
        return "local"
