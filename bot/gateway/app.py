"""The gateway's HTTP surface: /livez and /health (open), /events/poll and /metrics (bearer token).

/livez is liveness (the process answers: a container engine restarts it when this fails); /health
is readiness (signer, chains, LLM...), which an outage elsewhere may turn to 503 without the bot
being broken.

Deliberately tiny: four GET routes, no docs, no schema, so an unauthenticated caller learns
nothing beyond whether the bot is healthy. Responses are never cached. Requests must name the
gateway by a loopback name (or its configured host) in `Host`, so a web page that rebinds its own
DNS name to 127.0.0.1 cannot read even /health from the user's browser. A plain router rather
than a web framework: FastAPI and its server took about half a second of `owlia start`'s way to
its first /health, for four routes (bot.gateway.server speaks HTTP/1.1 through h11).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from bot.gateway.auth import BearerAuth
from bot.gateway.health import DEFAULT_TIMEOUT, HealthFn, evaluate
from bot.observability.events import EVENT_TYPES, EventBus
from bot.observability.metrics import Metrics

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MAX_LIMIT = 1000
MAX_WAIT = 30.0
UPTIME = "owlia_uptime_seconds"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")


JSON = "application/json"
SECURITY_HEADERS = (("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"))


class GatewayError(Exception):
    """A request refused with `status` and a short `detail` (never an exception's text)."""

    def __init__(self, status: int, detail: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = JSON
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, status: int, value: object, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        return cls(status, json.dumps(value, separators=(",", ":")).encode(), JSON, headers)

    def all_headers(self) -> list[tuple[str, str]]:
        return [
            ("Content-Type", self.content_type),
            ("Content-Length", str(len(self.body))),
            *SECURITY_HEADERS,
            *self.headers,
        ]


@dataclass(frozen=True)
class PollQuery:
    """/events/poll's parameters: anything out of range is 422."""

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
            if (
                not _INTEGER.fullmatch(raw.strip())
                or int(raw) < low
                or (high is not None and int(raw) > high)
            ):
                raise GatewayError(
                    422,
                    f"{name}: expected an integer from {low}"
                    + (f" to {high}" if high is not None else " up"),
                )
            return int(raw)

        since = integer("since", 0, 0)
        limit = integer("limit", 100, 1, MAX_LIMIT)
        kind = query.get("type")
        if kind is not None and kind not in EVENT_TYPES:
            raise GatewayError(422, f"unknown event type; expected one of: {', '.join(EVENT_TYPES)}")
        wait = 0.0
        if (raw := query.get("wait")) is not None:
            try:
                wait = float(raw)
            except ValueError:
                wait = math.nan
            if not (math.isfinite(wait) and 0.0 <= wait <= MAX_WAIT):
                raise GatewayError(422, f"wait: expected seconds from 0 to {MAX_WAIT:g}")
        return cls(since, limit, kind, wait)


def host_name(header: str) -> str:
    """The name in a Host header, without its port: `[::1]:8787` -> `[::1]`, `a:1` -> `a`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


Route = Callable[[Mapping[str, str]], Awaitable[Reply]]


class GatewayApp:
    """Answers one request: Host check, route, token, then the route itself."""

    def __init__(
        self,
        *,
        events: EventBus,
        metrics: Metrics,
        health: HealthFn,
        token: str | None,
        health_timeout: float = DEFAULT_TIMEOUT,
        hosts: tuple[str, ...] = (),
    ) -> None:
        self.events = events
        self.metrics = metrics
        self.health = health
        self.health_timeout = health_timeout
        self.auth = BearerAuth(token)
        self.hosts = frozenset(name.lower() for name in (*LOOPBACK_NAMES, *hosts))
        self.started = time.monotonic()
        metrics.gauge(UPTIME, "Seconds since the bot process started.")
        self.routes: dict[str, tuple[bool, Route]] = {  # path -> (needs the token, handler)
            "/livez": (False, self.livez),
            "/health": (False, self.get_health),
            "/events/poll": (True, self.poll_events),
            "/metrics": (True, self.get_metrics),
        }

    async def handle(self, method: str, target: str, headers: Mapping[str, str]) -> Reply:
        """`headers`: lower-case names. Never raises for a bad request: it is an answer."""
        try:
            return await self._route(method, target, headers)
        except GatewayError as exc:
            return Reply.json(exc.status, {"detail": exc.detail}, exc.headers)

    async def _route(self, method: str, target: str, headers: Mapping[str, str]) -> Reply:
        if host_name(headers.get("host", "")) not in self.hosts:
            return Reply(400, b"Invalid host header", "text/plain; charset=utf-8")
        parts = urlsplit(target)
        found = self.routes.get(parts.path)
        if found is None:
            raise GatewayError(404, "Not Found")
        if method not in ("GET", "HEAD"):
            raise GatewayError(405, "Method Not Allowed", (("Allow", "GET"),))
        protected, route = found
        if protected and not self.auth.accepts(headers.get("authorization")):
            raise GatewayError(401, "unauthorized", (("WWW-Authenticate", "Bearer"),))
        query = dict(parse_qsl(parts.query, keep_blank_values=True))  # the last value of a repeated name
        return await route(query)

    async def livez(self, query: Mapping[str, str]) -> Reply:
        return Reply.json(200, {"status": "alive"})

    async def get_health(self, query: Mapping[str, str]) -> Reply:
        ok, components = await evaluate(self.health, self.health_timeout)
        return Reply.json(
            200 if ok else 503, {"status": "ok" if ok else "degraded", "components": components}
        )

    async def poll_events(self, raw: Mapping[str, str]) -> Reply:
        """Events after `since`; with `wait`, hold the request until one matches or time is up.

        `last_seq` is the seq of the last returned event, or, when nothing matched, the bus
        position the answer covers, so a client can always pass it back as the next `since`.
        """
        query = PollQuery.parse(raw)
        deadline = time.monotonic() + query.wait
        while True:
            cursor = self.events.last_seq  # read before polling so nothing slips between the two
            found = self.events.poll(since=query.since, limit=query.limit, type=query.type)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                break
            await self.events.wait(max(query.since, cursor), remaining)
        last_seq = found[-1].seq if found else cursor
        return Reply.json(200, {"events": [e.as_dict() for e in found], "last_seq": last_seq})

    async def get_metrics(self, query: Mapping[str, str]) -> Reply:
        self.metrics.set(UPTIME, round(time.monotonic() - self.started, 3))
        return Reply(200, self.metrics.render().encode(), PROMETHEUS_CONTENT_TYPE)


def create_app(
    *,
    events: EventBus,
    metrics: Metrics,
    health: HealthFn,
    token: str | None,
    health_timeout: float = DEFAULT_TIMEOUT,
    hosts: tuple[str, ...] = (),
) -> GatewayApp:
    """Build the gateway app; `token=None` (or empty) keeps every protected route at 401.

    `hosts`: names besides the loopback ones that `Host` may carry (the configured bind host)."""
    return GatewayApp(
        events=events, metrics=metrics, health=health, token=token, health_timeout=health_timeout, hosts=hosts
    )
