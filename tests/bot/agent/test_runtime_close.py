"""Closing the runtime closes everything it holds, once, and in an order that matters: what it added
(skills and MCP servers, which call the signer; the fetcher; memory) before the signer client and chain
reader it was built on and shares with /health (Reach.close closes those)."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest


def test_close_stops_the_runtime_parts_then_the_reach_each_once(bot) -> None:
    async def go() -> list[str]:
        runtime = bot.runtime()
        services = runtime.services
        assert services.signer is runtime.reach.signer and services.chain is runtime.reach.chain
        await services.signer.status()  # a live connection to the signer, closed below
        await services.chain.call(31337, "eth_chainId")
        closed: list[str] = []
        for name, owner in [
            ("skills", runtime.skills),
            ("mcp", runtime.mcp),
            ("fetcher", services.fetcher),
            ("memory", services.memory),
            ("signer", services.signer),
            ("chain", services.chain),
        ]:
            real = owner.close

            def recorded(*args, _name=name, _real=real):
                closed.append(_name)
                return _real(*args)

            owner.close = recorded  # records the call and runs the real close
        await runtime.close()
        assert services.signer._writer is None  # the socket to the signer is closed
        with pytest.raises(sqlite3.ProgrammingError):
            services.memory.conn.execute("SELECT 1")
        return closed

    closed = asyncio.run(asyncio.wait_for(go(), 60))
    assert sorted(closed) == sorted(["skills", "mcp", "fetcher", "memory", "signer", "chain"])  # each once
    assert closed.index("skills") < closed.index("signer") and closed.index("mcp") < closed.index("signer")
    assert closed[-2:] == ["signer", "chain"]
