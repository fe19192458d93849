"""Prompt caching over a conversation; prints one JSON object. Run: .venv/bin/python bench/cache_bench.py

The whole bot (build_runtime, BotCore, the agent loop, the bot's own Anthropic and OpenAI clients)
holds a 20-turn conversation with the local LLM server (tests/fakes/llm_server.py), which accounts
for cached tokens as the providers document (tests/fakes/prompt_cache.py). The runtime's wall clock
advances 61 s per turn, so the conversation crosses a minute boundary at every turn. Every fifth turn
runs a read tool (one more model round). Reported per provider: the share of input tokens served
from the cache after the first turn (goal: at least 85 %) and the input tokens billed per turn
(uncached input; Anthropic's cache writes are listed apart, as it bills them at 1.25x).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results as recorded

TURNS = 20
STEP_SECONDS = 61.0


class Quiet:
    """A reply sink that keeps nothing: the bench measures the model's side."""

    async def text(self, delta: str) -> None: ...
    async def notice(self, text: str) -> None: ...
    async def tool_event(self, event) -> None: ...
    async def confirm(self, prompt: str, timeout: float) -> bool:
        return False

    async def done(self, text: str) -> None: ...


def set_clock(runtime, now: float) -> None:
    """The runtime's wall clock at `now`. A checkout from before `Runtime.clock` (a baseline run of
    this script from another checkout) read `datetime.now()` in bot.runtime.state: that one name is
    pointed at the same simulated time there, so both sides see the same minutes."""
    if hasattr(runtime, "clock"):
        runtime.clock = lambda: now
        return
    import datetime as real
    import types

    import bot.runtime.state as state

    class Frozen(real.datetime):
        @classmethod
        def now(cls, tz=None):
            return real.datetime.fromtimestamp(now, tz)

    state.dt = types.SimpleNamespace(datetime=Frozen, timezone=real.timezone)


def conversation(provider: str, turns: int = TURNS) -> dict:
    from bot.channels.base import Inbound
    from bot.config import load_bot_config
    from bot.runtime.assemble import build_runtime
    from bot.runtime.llm_pool import Secret
    from tests.bot.agent.conftest import call, default_bot_section
    from tests.fakes.llm_server import FakeLLMServer, Reply

    keys = {"anthropic": "sk-ant-api03-" + "t" * 40, "openai": "sk-proj-" + "o" * 40}
    with FakeLLMServer(count_tokens=True) as llm, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        bot = default_bot_section(llm)
        if provider == "openai":
            bot["llm"]["profiles"] = [{"name": "main", "model": "openai/gpt-4o", "base_url": llm.openai_url}]
        (home / "config.yaml").write_text(yaml.safe_dump({"bot": bot}))
        for turn in range(turns):
            answer = f"Answer {turn}: " + "a reasonably long reply about the wallet and the market. " * 6
            if turn % 5 == 4:
                llm.enqueue(
                    Reply(tool_calls=[call("address_book", {}, f"toolu_book_{turn}")]), Reply(text=[answer])
                )
            else:
                llm.enqueue(Reply(text=[answer]))

        async def lookup(name: str):
            return Secret("api_key", keys[name]) if name in keys else None

        async def run() -> None:
            runtime = build_runtime(home, load_bot_config(home), lookup=lookup)
            start = 1_796_000_000.0 + 30  # half a minute past: every turn crosses a minute boundary
            try:
                for turn in range(turns):
                    set_clock(runtime, start + turn * STEP_SECONDS)
                    question = f"Question {turn}: what changed in my wallet today?"
                    await runtime.core.handle(Inbound("console", "bench", f"m{turn}", question), Quiet())
            finally:
                await runtime.close()

        asyncio.run(run())
        usage = llm.usage_log
    return summarize(provider, usage)


def summarize(provider: str, usage: list[dict]) -> dict:
    rounds = list(usage)
    prompt = [u["prompt"] for u in rounds]
    cached = [u["cached"] for u in rounds]
    billed = [u["prompt"] - u["cached"] - u.get("written", 0) for u in rounds]
    written = [u.get("written", 0) for u in rounds]
    first = rounds[0]
    after = rounds[1:]
    share = sum(u["cached"] for u in after) / max(1, sum(u["prompt"] for u in after))
    return {
        "provider": provider,
        "model_requests": len(rounds),
        "first_request_prompt_tokens": first["prompt"],
        "cached_share_after_first": round(share, 4),
        "goal": 0.85,
        "meets_goal": share >= 0.85,
        "prompt_tokens_per_request": prompt,
        "cached_tokens_per_request": cached,
        "billed_uncached_input_per_request": billed,
        "cache_writes_per_request": written,
        "billed_uncached_input_mean_after_first": round(sum(billed[1:]) / max(1, len(billed) - 1), 1),
        "prompt_tokens_mean_after_first": round(sum(prompt[1:]) / max(1, len(prompt) - 1), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    recorded.add_arguments(parser)
    args = parser.parse_args()
    turns = args.turns
    started = time.time()
    results = [conversation("anthropic", turns), conversation("openai", turns)]
    report = {
        "bench": "prompt_cache",
        "turns": turns,
        "seconds_per_turn": STEP_SECONDS,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu": platform.processor() or platform.machine(),
        },
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "results": results,
        "wall_seconds": round(time.time() - started, 2),
    }
    recorded.emit("cache", report, args)


if __name__ == "__main__":
    main()
