"""A real gateway on 127.0.0.1 (free port) with a real aiohttp client, for one test coroutine."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import aiohttp

from bot.gateway import ComponentHealth, create_app, start_in_background
from bot.gateway.health import HealthFn
from bot.observability.events import EventBus
from bot.observability.metrics import Metrics, default_metrics

TOKEN = "t" * 20 + "-gateway-test-token-0123456789"


async def all_ok() -> Mapping[str, ComponentHealth]:
    return {"bot": ComponentHealth(True, "running"), "signer": ComponentHealth(True, "reachable")}


@dataclass
class Gateway:
    http: aiohttp.ClientSession
    events: EventBus
    metrics: Metrics
    port: int

    def auth(self, token: str = TOKEN) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


@contextlib.asynccontextmanager
async def running(
    *,
    token: str | None = TOKEN,
    health: HealthFn = all_ok,
    events: EventBus | None = None,
    metrics: Metrics | None = None,
    health_timeout: float = 3.0,
) -> AsyncIterator[Gateway]:
    events = events or EventBus()
    metrics = metrics or default_metrics()
    app = create_app(
        events=events, metrics=metrics, health=health, token=token, health_timeout=health_timeout
    )
    server = await start_in_background(app, "127.0.0.1", 0, token=token)
    try:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            yield Gateway(http, events, metrics, server.port)
    finally:
        await server.stop()
