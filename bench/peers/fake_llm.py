"""The fake LLM both peers talk to: the repo's own tests/fakes/llm_server.py, answering forever. The peers
need an OpenAI-compatible endpoint that answers every completion at once and never runs out of scripted
replies; this wrapper gives the test fake an endless "pong" queue and a bounded, counting request log, so
the measuring process stays small over thousands of messages.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

from installs import REPO


class FakeLLM:
    """tests/fakes/llm_server.FakeLLMServer with an endless reply queue ("pong") and a bounded
    request log (the peers re-send whole histories; keeping every body would grow this process)."""

    def __init__(self) -> None:
        sys.path.insert(0, str(REPO))
        from tests.fakes.llm_server import FakeLLMServer, Reply  # noqa: PLC0415

        reply = Reply(text=["pong"])
        counter = self

        class Endless:
            def __bool__(self) -> bool:
                return True

            def popleft(self) -> Any:
                return reply

        class CountingLog(deque):
            def append(self, item: Any) -> None:  # noqa: D102
                counter.count += 1
                super().append(item)

        self.count = 0
        self.server = FakeLLMServer()
        self.server._script.replies = Endless()  # noqa: SLF001
        self.server._script.requests = CountingLog(maxlen=16)  # noqa: SLF001
        self.server.start()

    @property
    def openai_url(self) -> str:
        return self.server.openai_url

    def close(self) -> None:
        self.server.stop()
