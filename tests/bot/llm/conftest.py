"""Fixtures for the LLM layer: one scripted fake server per test, and a way to drain a stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bot.llm.types import StreamEvent
from tests.fakes.llm_server import FakeLLMServer


@pytest.fixture()
def server():
    with FakeLLMServer() as fake:
        yield fake


def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    """Run an async event stream to completion from a sync test."""

    async def drain() -> list[StreamEvent]:
        return [event async for event in stream]

    return asyncio.run(drain())
