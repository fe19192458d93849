"""Prices against a local HTTP server speaking CoinGecko's /simple/price JSON.

`AiohttpFetcher` stands in for bot.net.fetch.SafeFetcher (not written yet) through the same
duck-typed interface: `await fetch(url)` -> object with `.status` and `.text`.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from types import SimpleNamespace

import aiohttp
import pytest
from aiohttp import web

from bot.tools.base import ToolFailure
from bot.tools.prices import CachedPrices, HttpJsonPrices, StaticPrices, price, usd_text
from tests.bot.tools.support import call, make_ctx

BODIES = {
    "ethereum": '{"ethereum": {"usd": 3000}}',
    "usd-coin": '{"usd-coin": {"usd": 0.999912345678901234567}}',
    "bitcoin": '{"bitcoin": {"usd": 65432.123456789012345}}',
    "delisted": "{}",
    "weird": '{"weird": {"usd": -5}}',
}


class AiohttpFetcher:
    def __init__(self) -> None:
        self.urls: list[str] = []

    async def fetch(self, url: str) -> SimpleNamespace:
        self.urls.append(url)
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return SimpleNamespace(status=response.status, text=await response.text())


class FakeCoinGecko:
    def __init__(self, delay: float = 0.0) -> None:
        self.hits: list[str] = []
        self.delay = delay
        self.down = False

    async def handle(self, request: web.Request) -> web.Response:
        ids = request.query.get("ids", "")
        self.hits.append(ids)
        assert request.query.get("vs_currencies") == "usd"
        await asyncio.sleep(self.delay)
        if self.down:
            return web.Response(status=503, text="busy")
        return web.Response(text=BODIES.get(ids, "{}"), content_type="application/json")

    async def __aenter__(self) -> str:
        app = web.Application()
        app.router.add_get("/api/v3/simple/price", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.cleanup()


IDS = {"ETH": "ethereum", "USDC": "usd-coin", "BTC": "bitcoin", "GONE": "delisted", "WEIRD": "weird"}


def test_http_prices_are_exact_decimals_and_unknown_is_none():
    async def main():
        server = FakeCoinGecko()
        async with server as base:
            source = HttpJsonPrices(AiohttpFetcher(), ids=IDS, base_url=base)
            assert await source.usd_price("eth") == "3000"
            assert await source.usd_price("USDC") == "0.999912345678901234567"
            assert await source.usd_price("BTC") == "65432.123456789012345"
            assert await source.usd_price("GONE") is None
            assert await source.usd_price("PEPE") is None  # no id mapping: nothing is even sent
            assert "ethereum" in server.hits and all("pepe" not in h for h in server.hits)
            with pytest.raises(Exception, match="invalid price"):
                await source.usd_price("WEIRD")
            server.down = True
            with pytest.raises(Exception, match="HTTP 503"):
                await source.usd_price("ETH")

    asyncio.run(main())


def test_cache_coalesces_concurrent_lookups_and_expires():
    async def main():
        now = [1000.0]
        server = FakeCoinGecko(delay=0.05)
        async with server as base:
            cached = CachedPrices(
                HttpJsonPrices(AiohttpFetcher(), ids=IDS, base_url=base),
                ttl_seconds=60,
                clock=lambda: now[0],
                miss_ttl_seconds=10,
            )
            results = await asyncio.gather(*(cached.usd_price("ETH") for _ in range(10)))
            assert results == ["3000"] * 10 and server.hits == ["ethereum"]
            now[0] += 59
            assert await cached.usd_price("eth") == "3000" and len(server.hits) == 1
            now[0] += 2
            await cached.usd_price("ETH")
            assert len(server.hits) == 2
            assert await cached.usd_price("GONE") is None
            assert await cached.usd_price("GONE") is None and len(server.hits) == 3  # miss cached
            now[0] += 11
            assert await cached.usd_price("GONE") is None and len(server.hits) == 4  # ... for less time
            server.down = True
            with pytest.raises(Exception, match="503"):
                await cached.usd_price("BTC")
            server.down = False
            assert await cached.usd_price("BTC") == "65432.123456789012345"  # errors are not cached

    asyncio.run(main())


def test_price_tool_formats_and_never_guesses(tmp_path):
    async def main():
        now = [50.0]
        server = FakeCoinGecko()
        async with server as base:
            source = CachedPrices(
                HttpJsonPrices(AiohttpFetcher(), ids=IDS, base_url=base), 300, clock=lambda: now[0]
            )
            ctx = make_ctx(tmp_path, prices=source)
            out = await call(price, ctx, symbol="eth")
            assert out.content == "1 ETH = $3,000.00 (coingecko, just now)" and not out.untrusted
            now[0] += 42
            assert (await call(price, ctx, symbol="ETH")).content == "1 ETH = $3,000.00 (coingecko, 42s old)"
            assert (await call(price, ctx, symbol="USDC")).content.startswith("1 USDC = $0.999912 ")
            unknown = await call(price, ctx, symbol="PEPE")
            assert "No USD price is known for PEPE" in unknown.content and unknown.data["usd"] is None
            server.down = True
            with pytest.raises(ToolFailure, match="unavailable"):
                await call(price, ctx, symbol="BTC")
            with pytest.raises(ToolFailure, match="no price source"):
                await call(price, make_ctx(tmp_path), symbol="ETH")

    asyncio.run(main())


def test_static_prices_and_formatting():
    static = StaticPrices({"usdc": "1", "DAI": "0.9998"}, name="pinned")
    assert asyncio.run(static.usd_price("USDC")) == "1" and asyncio.run(static.usd_price("ETH")) is None
    for bad in ("abc", "-1", "0", "NaN", "Infinity", 1.5):
        with pytest.raises(ValueError):
            StaticPrices({"X": bad})  # type: ignore[dict-item]
    assert usd_text(Decimal("1234567.891")) == "$1,234,567.89"
    assert usd_text(Decimal("0.5")) == "$0.50"
    assert usd_text(Decimal("0.0000123456789")) == "$0.0000123457"
