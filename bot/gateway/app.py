"""The gateway's HTTP surface: /livez and /health (open), /events/poll and /metrics (bearer token).

/livez is liveness (the process answers: a container engine restarts it when this fails); /health
is readiness (signer, chains, LLM...), which an outage elsewhere may turn to 503 without the bot
being broken.

Deliberately tiny: no docs, no OpenAPI schema, no other routes, so an unauthenticated caller
learns nothing beyond whether the bot is healthy. Responses are never cached. Requests must name
the gateway by a loopback name (or its configured host) in `Host`, so a web page that rebinds its
own DNS name to 127.0.0.1 cannot read even /health from the user's browser.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.middleware.trustedhost import TrustedHostMiddleware

from bot.gateway.auth import BearerAuth
from bot.gateway.health import DEFAULT_TIMEOUT, HealthFn, evaluate
from bot.runtime.events import EVENT_TYPES, EventBus
from bot.runtime.metrics import Metrics

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MAX_LIMIT = 1000
MAX_WAIT = 30.0
UPTIME = "owlia_uptime_seconds"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")


@dataclass(frozen=True)
class PollQuery:
    """/events/poll's parameters, checked by hand: a route whose parameters FastAPI models itself
    makes it import pydantic.v1 and build models at start-up (a tenth of a second on the path to
    the first /health). Anything out of range is 422, as FastAPI would answer."""

    since: int = 0
    limit: int = 100
    type: str | None = None
    wait: float = 0.0

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> PollQuery:
        def integer(name: str, default: int, low: int, high: int | None = None) -> int:
            raw = query.get(name)
            if raw is None:
                return default
            if not _INTEGER.fullmatch(raw.strip()) or int(raw) < low or (high is not None and int(raw) > high):
                raise HTTPException(422, detail=f"{name}: expected an integer from {low}"
                                                + (f" to {high}" if high is not None else " up"))
            return int(raw)

        since = integer("since", 0, 0)
        limit = integer("limit", 100, 1, MAX_LIMIT)
        kind = query.get("type")
        if kind is not None and kind not in EVENT_TYPES:
            raise HTTPException(422, detail=f"unknown event type; expected one of: {', '.join(EVENT_TYPES)}")
        wait = 0.0
        if (raw := query.get("wait")) is not None:
            try:
                wait = float(raw)
            except ValueError:
                wait = math.nan
            if not (math.isfinite(wait) and 0.0 <= wait <= MAX_WAIT):
                raise HTTPException(422, detail=f"wait: expected seconds from 0 to {MAX_WAIT:g}")
        return cls(since, limit, kind, wait)


def create_app(
    *,
    events: EventBus,
    metrics: Metrics,
    health: HealthFn,
    token: str | None,
    health_timeout: float = DEFAULT_TIMEOUT,
    hosts: tuple[str, ...] = (),
) -> FastAPI:
    """Build the gateway app; `token=None` (or empty) keeps every protected route at 401.

    `hosts`: names besides the loopback ones that `Host` may carry (the configured bind host)."""
    app = FastAPI(
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        swagger_ui_oauth2_redirect_url=None,
        title="owliabot-gateway",
    )
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=[*LOOPBACK_NAMES, *hosts])
    require_token = Depends(BearerAuth(token))
    started = time.monotonic()
    metrics.gauge(UPTIME, "Seconds since the bot process started.")

    @app.middleware("http")
    async def no_store(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @app.get("/livez")
    async def get_livez() -> JSONResponse:
        return JSONResponse({"status": "alive"})

    @app.get("/health")
    async def get_health() -> JSONResponse:
        ok, components = await evaluate(health, health_timeout)
        body = {"status": "ok" if ok else "degraded", "components": components}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/events/poll", dependencies=[require_token])
    async def poll_events(request: Request) -> JSONResponse:
        """Events after `since`; with `wait`, hold the request until one matches or time is up.

        `last_seq` is the seq of the last returned event, or, when nothing matched, the bus
        position the answer covers, so a client can always pass it back as the next `since`.
        """
        query = PollQuery.parse(request.query_params)
        deadline = time.monotonic() + query.wait
        while True:
            cursor = events.last_seq  # read before polling so nothing slips between the two
            found = events.poll(since=query.since, limit=query.limit, type=query.type)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                break
            await events.wait(max(query.since, cursor), remaining)
        last_seq = found[-1].seq if found else cursor
        return JSONResponse({"events": [e.as_dict() for e in found], "last_seq": last_seq})

    @app.get("/metrics", dependencies=[require_token])
    async def get_metrics() -> PlainTextResponse:
        metrics.set(UPTIME, round(time.monotonic() - started, 3))
        return PlainTextResponse(metrics.render(), media_type=PROMETHEUS_CONTENT_TYPE)

    return app
