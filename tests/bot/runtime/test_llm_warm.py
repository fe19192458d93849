"""`LLMPool.warm` imports the provider adapter (and httpx) a configured profile needs, off the event loop, so the
first reply after `owlia start` does not wait for it, and builds the router the first message then
reuses (its clients' TLS contexts); a profile without a credential warms nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import asyncio, sys, tempfile
from pathlib import Path
from bot.config import LLMProfileSettings, LLMSettings
from bot.runtime.llm_pool import LLMPool, Secret

async def lookup(name):
    return Secret("api_key", "sk-test") if name == sys.argv[1] else None

async def main():
    settings = LLMSettings(profiles=(LLMProfileSettings(name="main", model="anthropic/claude-x"),))
    pool = LLMPool(settings, lookup, Path(tempfile.mkdtemp()) / "cooldowns.json")
    before = "httpx" in sys.modules
    ticks = 0

    async def ticker():  # the loop keeps running while the adapter is imported in a thread
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    modules = await pool.warm()
    task.cancel()
    built = pool._routers.get(None)  # what warm() left for the first message
    reused = built is not None and await pool.router() is built[1]
    print(before, "httpx" in sys.modules, ",".join(modules), ticks > 1, reused, "anthropic" in sys.modules)

asyncio.run(main())
"""


def warm(credential: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, credential],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()


def test_warm_imports_the_adapter_of_a_credentialed_profile_without_blocking_the_loop() -> None:
    assert warm("anthropic") == "False True bot.llm.anthropic_provider True True False"  # no vendor SDK


def test_warm_imports_nothing_without_a_credential() -> None:
    assert warm("nobody") == "False False  False False False"
