"""The fake LLM every side talks to: the repo's own tests/fakes/llm_server.py, answering forever. It
speaks both wire formats the sides need, OpenAI chat completions (nanobot's `custom` provider, OpenClaw's
`openai-completions` provider) and Anthropic messages (OwliaBot's anthropic profile), streaming or not;
every completion is answered at once with REPLY, and only the last few request bodies are kept, so the
measuring process stays small over thousands of messages.
"""

from __future__ import annotations

import sys

from installs import REPO

REPLY = "pong"


class FakeLLM:
    """tests/fakes/llm_server.FakeLLMServer in a thread of this process, repeating REPLY."""

    def __init__(self) -> None:
        sys.path.insert(0, str(REPO))
        from tests.fakes.llm_server import FakeLLMServer, Reply  # noqa: PLC0415

        self.server = FakeLLMServer()
        self.server.repeat(Reply(text=[REPLY]), keep_requests=16)
        self.server.start()

    @property
    def count(self) -> int:
        """Completions answered so far (every one comes from the repeat cycle)."""
        return self.server._script.served  # noqa: SLF001 - the fake keeps no public counter

    @property
    def url(self) -> str:
        """Base URL of the Anthropic Messages API (clients append /v1/messages)."""
        return self.server.url

    @property
    def openai_url(self) -> str:
        """Base URL of the OpenAI chat completions API (clients append /chat/completions)."""
        return self.server.openai_url

    def close(self) -> None:
        self.server.stop()
