"""USD prices for the `price` tool and anything else that wants one: static, CoinGecko, cached.

Prices are Decimal strings end to end: CoinGecko's JSON numbers are parsed straight to Decimal,
so "3000.1234567890123" never passes through a float. An unknown symbol is None, never a guess,
and a source that fails raises PriceUnavailable rather than pretending the asset is unknown.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any
from urllib.parse import quote

from pydantic import Field

from bot.tools.base import Level, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from policies.kernel import safejson

MAX_PRICE = Decimal(10) ** 15  # above any real asset; refuses absurd or hostile replies
DEFAULT_COINGECKO_IDS: Mapping[str, str] = {
    "ETH": "ethereum",
    "WETH": "weth",
    "BTC": "bitcoin",
    "WBTC": "wrapped-bitcoin",
    "USDC": "usd-coin",
    "USDT": "tether",
    "DAI": "dai",
    "SOL": "solana",
    "POL": "polygon-ecosystem-token",
    "ARB": "arbitrum",
    "OP": "optimism",
    "LINK": "chainlink",
    "UNI": "uniswap",
    "AAVE": "aave",
    "BNB": "binancecoin",
}


class PriceUnavailable(Exception):
    """The source could not answer (network, HTTP status, bad body). Safe to show: no URL, no key."""


@dataclass(frozen=True)
class Quote:
    symbol: str
    usd: Decimal
    source: str
    fetched_at: float  # on the clock of whoever made the quote; only differences are meaningful


def parse_price(value: Any) -> Decimal | None:
    """A finite, positive, bounded Decimal, or None. Accepts str/int/Decimal, never a float."""
    if isinstance(value, (bool, float)) or not isinstance(value, (str, int, Decimal)):
        return None
    try:
        price = Decimal(value)
    except InvalidOperation:
        return None
    return price if price.is_finite() and 0 < price < MAX_PRICE else None


def price_text(price: Decimal) -> str:
    """Decimal string without exponent or needless zeros ("0.0000123", "3000.5")."""
    text = format(price, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


class StaticPrices:
    """Fixed prices from config (e.g. stablecoins pinned at 1); refuses bad entries at start-up."""

    def __init__(self, prices: Mapping[str, str], name: str = "static") -> None:
        self.name = name
        self._prices: dict[str, Decimal] = {}
        for symbol, value in prices.items():
            price = parse_price(value)
            if price is None:
                raise ValueError(
                    f"static price for {symbol} must be a positive decimal string, got {value!r}"
                )
            self._prices[symbol.upper()] = price

    async def usd_price(self, symbol: str) -> str | None:
        price = self._prices.get(symbol.upper())
        return None if price is None else price_text(price)


class HttpJsonPrices:
    """CoinGecko's /simple/price, one id per request, through the bot's SafeFetcher.

    `fetcher` is duck-typed: `await fetcher.fetch(url)` returns something with `.status` and `.text`.
    """

    def __init__(
        self,
        fetcher: Any,
        *,
        ids: Mapping[str, str] = DEFAULT_COINGECKO_IDS,
        base_url: str = "https://api.coingecko.com",
        name: str = "coingecko",
    ) -> None:
        self.name = name
        self._fetcher = fetcher
        self._ids = {k.upper(): v for k, v in ids.items()}
        self._base = base_url.rstrip("/")

    async def usd_price(self, symbol: str) -> str | None:
        coin = self._ids.get(symbol.upper())
        if coin is None:
            return None  # no mapping: unknown, and nothing is sent
        url = f"{self._base}/api/v3/simple/price?ids={quote(coin, safe='')}&vs_currencies=usd"
        try:
            result = await self._fetcher.fetch(url)
        except Exception as exc:  # noqa: BLE001 - any fetch failure means "unavailable"
            raise PriceUnavailable(f"{self.name} could not be reached ({type(exc).__name__})") from None
        status = getattr(result, "status", None)
        if status != 200:
            raise PriceUnavailable(f"{self.name} answered HTTP {status}")
        if getattr(result, "truncated", False):
            raise PriceUnavailable(f"{self.name} answered more than the fetcher reads")
        try:
            body = safejson.loads(result.text, parse_float=Decimal, parse_int=Decimal)
        except (TypeError, ValueError):
            raise PriceUnavailable(f"{self.name} did not answer JSON") from None
        if not isinstance(body, dict):
            raise PriceUnavailable(f"{self.name} answered an unexpected shape")
        entry = body.get(coin)
        if entry is None or (isinstance(entry, dict) and "usd" not in entry):
            return None
        price = parse_price(entry.get("usd")) if isinstance(entry, dict) else None
        if price is None:
            raise PriceUnavailable(f"{self.name} answered an invalid price for {symbol.upper()}")
        return price_text(price)


class CachedPrices:
    """Caches answers (misses for less time); concurrent lookups of one symbol share one request."""

    def __init__(
        self,
        source: Any,
        ttl_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        miss_ttl_seconds: float | None = None,
    ) -> None:
        self.name = source.name
        self._source = source
        self._ttl = ttl_seconds
        self._miss_ttl = ttl_seconds / 4 if miss_ttl_seconds is None else miss_ttl_seconds
        self.clock = clock
        self._cache: dict[str, tuple[float, Quote | None]] = {}  # symbol -> (expires, quote)
        self._inflight: dict[str, asyncio.Task[Quote | None]] = {}

    async def usd_price(self, symbol: str) -> str | None:
        found = await self.quote(symbol)
        return None if found is None else price_text(found.usd)

    async def quote(self, symbol: str) -> Quote | None:
        key = symbol.upper()
        cached = self._cache.get(key)
        if cached is not None and self.clock() < cached[0]:
            return cached[1]
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._load(key))
            self._inflight[key] = task
            task.add_done_callback(functools.partial(self._settle, key))
        # shield: one caller timing out must not cancel the request the others are waiting on
        return await asyncio.shield(task)

    def _settle(self, key: str, task: asyncio.Task[Quote | None]) -> None:
        self._inflight.pop(key, None)
        if not task.cancelled():
            task.exception()  # retrieved, so an error nobody awaited is not logged as lost

    async def _load(self, key: str) -> Quote | None:
        value = await self._source.usd_price(key)
        now = self.clock()
        price = None if value is None else parse_price(value)
        found = None if price is None else Quote(key, price, self.name, now)
        self._cache[key] = (now + (self._ttl if found else self._miss_ttl), found)
        return found


async def quote_with_age(source: Any, symbol: str) -> tuple[Quote, float] | None:
    """A Quote and its age in seconds from any PriceSource; sources that do not cache are fresh."""
    if isinstance(source, CachedPrices):
        found = await source.quote(symbol)
        return None if found is None else (found, max(0.0, source.clock() - found.fetched_at))
    value = await source.usd_price(symbol)
    price = None if value is None else parse_price(value)
    return None if price is None else (Quote(symbol.upper(), price, source.name, time.monotonic()), 0.0)


def usd_text(price: Decimal) -> str:
    """$3,000.00 for prices of a dollar or more; six significant digits below ($0.0000123457)."""
    if price >= 1:
        return f"${price.quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"
    exponent = Decimal(1).scaleb(price.adjusted() - 5)
    text = price_text(price.quantize(exponent, rounding=ROUND_HALF_EVEN))
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def age_text(seconds: float) -> str:
    if seconds < 5:
        return "just now"
    if seconds < 120:
        return f"{int(seconds)}s old"
    return f"{int(seconds // 60)} min old"


class PriceArgs(ToolArgs):
    symbol: str = Field(pattern=r"^[A-Za-z0-9._\-]{1,20}$", description="asset symbol, e.g. ETH or USDC")


@tool(
    "price",
    Level.READ,
    PriceArgs,
    description="""
USD price of one unit of an asset from the configured price source, with the source and its age.
An unknown asset is reported as unknown: never estimate a price yourself.""",
)
async def price(ctx: ToolContext, args: PriceArgs) -> ToolOutput:
    source = ctx.services.prices
    if source is None:
        raise ToolFailure("no price source is configured, so no price is known")
    symbol = args.symbol.upper()
    try:
        found = await quote_with_age(source, symbol)
    except PriceUnavailable as exc:
        raise ToolFailure(f"price source unavailable: {exc}; no price is known right now") from None
    if found is None:
        return ToolOutput(
            f"No USD price is known for {symbol} from {source.name}; do not guess one.",
            untrusted=False,
            data={"symbol": symbol, "usd": None, "source": source.name},
        )
    quote, age = found
    text = f"1 {symbol} = {usd_text(quote.usd)} ({quote.source}, {age_text(age)})"
    return ToolOutput(
        text,
        untrusted=False,
        data={
            "symbol": symbol,
            "usd": price_text(quote.usd),
            "source": quote.source,
            "age_seconds": round(age, 1),
        },
    )


PRICE_TOOLS = (price,)
