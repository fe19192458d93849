"""Measure search latency on a synthetic workspace, for tests and the team's benchmark suite."""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

from bot.memory.index import MemoryIndex

_WORDS = (
    "wallet swap bridge gas fee nonce approve allowance token stablecoin vault yield staking validator "
    "ledger hardware multisig policy signer limit daily weekly friend address book chain mainnet base "
    "arbitrum optimism polygon uniswap curve aave compound lido eigen restake airdrop claim deadline "
    "slippage route quote price oracle alert reminder invoice rent salary tax report review"
).split()


def _note(rng: random.Random, i: int) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(12, 40)))
    return f"# Note {i}\n\n{words}\nref-{i}\n"


def bench_search(n: int = 10_000, queries: int = 200, seed: int = 7) -> dict[str, float]:
    """Index `n` small notes, run `queries` searches; returns index seconds and p50/p95 search ms."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "memory").mkdir(parents=True)
        for i in range(n):
            (ws / "memory" / f"n{i:05d}.md").write_text(_note(rng, i), encoding="utf-8")
        with MemoryIndex(ws, Path(tmp) / "index.sqlite") as index:
            start = time.perf_counter()
            index.reindex()
            index_s = time.perf_counter() - start
            timings = []
            for _ in range(queries):
                query = " ".join(rng.sample(_WORDS, rng.randint(1, 3)))
                start = time.perf_counter()
                index.search(query, limit=5)
                timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    return {
        "notes": float(n),
        "index_s": index_s,
        "p50_ms": statistics.median(timings),
        "p95_ms": timings[int(len(timings) * 0.95) - 1],
    }
