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

import time
from collections.abc import Awaitable, Callable

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
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
    async def poll_events(
        since: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=MAX_LIMIT),
        type: str | None = Query(None),
        wait: float = Query(0.0, ge=0.0, le=MAX_WAIT),
    ) -> dict[str, object]:
        """Events after `since`; with `wait`, hold the request until one matches or time is up.

        `last_seq` is the seq of the last returned event, or, when nothing matched, the bus
        position the answer covers, so a client can always pass it back as the next `since`.
        """
        if type is not None and type not in EVENT_TYPES:
            raise HTTPException(422, detail=f"unknown event type; expected one of: {', '.join(EVENT_TYPES)}")
        deadline = time.monotonic() + wait
        while True:
            cursor = events.last_seq  # read before polling so nothing slips between the two
            found = events.poll(since=since, limit=limit, type=type)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                break
            await events.wait(max(since, cursor), remaining)
        last_seq = found[-1].seq if found else cursor
        return {"events": [e.as_dict() for e in found], "last_seq": last_seq}

    @app.get("/metrics", dependencies=[require_token])
    async def get_metrics() -> PlainTextResponse:
        metrics.set(UPTIME, round(time.monotonic() - started, 3))
        return PlainTextResponse(metrics.render(), media_type=PROMETHEUS_CONTENT_TYPE)

    return app
