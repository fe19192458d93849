"""LLMPool.router(profile): the heartbeat's cheaper model goes first, the rest stay as failover."""

from __future__ import annotations

import asyncio

import pytest

from bot.config import LLMSettings
from bot.runtime.llm_pool import LLMPool, Secret


def test_profile_first_then_failover_and_cached(tmp_path):
    settings = LLMSettings(
        profiles=(
            {"name": "main", "model": "anthropic/claude-big"},
            {"name": "cheap", "model": "anthropic/claude-small"},
            {"name": "other", "model": "openai/gpt-x"},
        )
    )

    async def lookup(name: str) -> Secret | None:
        return Secret("api_key", "sk-ant-api03-" + "k" * 40) if name == "anthropic" else None

    async def go() -> None:
        pool = LLMPool(settings, lookup, tmp_path / "cooldowns.json")
        default = await pool.router()
        cheap = await pool.router("cheap")
        assert [p.name for p in default.profiles] == ["main", "cheap"]  # "other" has no credential
        assert [p.name for p in cheap.profiles] == ["cheap", "main"]
        assert await pool.router("cheap") is cheap and await pool.router() is default
        with pytest.raises(ValueError, match="no LLM profile named 'gpt5'"):
            await pool.router("gpt5")

    asyncio.run(go())
