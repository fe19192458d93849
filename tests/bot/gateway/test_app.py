"""The gateway over real HTTP: health, auth, event polling (incl. long-poll) and metrics."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping

import pytest

from bot.gateway import PROMETHEUS_CONTENT_TYPE, ComponentHealth, combine_checks
from tests.bot.gateway.harness import TOKEN, running
from tests.bot.observability.promtext import parse

PROTECTED = ("/events/poll", "/metrics")


# -- /health ------------------------------------------------------------------------------------


def test_health_ok_needs_no_token() -> None:
    async def main() -> None:
        async with running() as gw:
            async with gw.http.get("/health") as resp:
                assert resp.status == 200
                assert resp.headers["Cache-Control"] == "no-store"
                body = await resp.json()
        assert body == {
            "status": "ok",
            "components": {
                "bot": {"ok": True, "detail": "running"},
                "signer": {"ok": True, "detail": "reachable"},
            },
        }

    asyncio.run(main())


def test_health_degraded_is_503() -> None:
    async def degraded() -> Mapping[str, ComponentHealth]:
        return {"bot": ComponentHealth(True), "provider": ComponentHealth(False, "x" * 1000)}

    async def main() -> None:
        async with running(health=degraded, token=None) as gw:
            async with gw.http.get("/health") as resp:
                assert resp.status == 503
                body = await resp.json()
        assert body["status"] == "degraded"
        assert body["components"]["bot"] == {"ok": True, "detail": ""}
        assert body["components"]["provider"]["ok"] is False
        assert len(body["components"]["provider"]["detail"]) <= 200

    asyncio.run(main())


def test_livez_answers_while_readiness_is_degraded() -> None:
    """Liveness (the container healthcheck) must not follow an outage elsewhere, or the engine
    restarts a bot that is fine and only waiting for its LLM provider."""

    async def degraded() -> Mapping[str, ComponentHealth]:
        return {"bot": ComponentHealth(True), "provider": ComponentHealth(False, "down")}

    async def main() -> None:
        async with running(health=degraded, token=None) as gw:
            async with gw.http.get("/health") as resp:
                assert resp.status == 503
            async with gw.http.get("/livez") as resp:
                assert resp.status == 200
                assert resp.headers["Cache-Control"] == "no-store"
                assert await resp.json() == {"status": "alive"}

    asyncio.run(main())


def test_health_component_that_hangs_is_reported_not_ok() -> None:
    async def fine() -> ComponentHealth:
        return ComponentHealth(True, "up")

    async def hangs() -> ComponentHealth:
        await asyncio.sleep(60)
        return ComponentHealth(True)

    async def crashes() -> ComponentHealth:
        raise ConnectionError("http://user:hunter2@provider.example/ refused")

    health = combine_checks({"bot": fine, "signer": hangs, "provider": crashes}, timeout=0.3)

    async def main() -> None:
        async with running(health=health) as gw:
            start = time.monotonic()
            async with gw.http.get("/health") as resp:
                assert resp.status == 503
                body = await resp.json()
            assert time.monotonic() - start < 2.5
        comps = body["components"]
        assert comps["bot"] == {"ok": True, "detail": "up"}
        assert comps["signer"]["ok"] is False and "timed out" in comps["signer"]["detail"]
        assert comps["provider"] == {"ok": False, "detail": "check failed (ConnectionError)"}
        assert "hunter2" not in str(body)  # exception text never reaches the response

    asyncio.run(main())


def test_health_callable_that_hangs_hits_the_gateway_timeout() -> None:
    async def stuck() -> Mapping[str, ComponentHealth]:
        await asyncio.sleep(60)
        return {}

    async def main() -> None:
        async with running(health=stuck, health_timeout=0.3) as gw:
            async with gw.http.get("/health") as resp:
                assert resp.status == 503
                body = await resp.json()
        assert body["status"] == "degraded"
        assert body["components"]["health"]["ok"] is False

    asyncio.run(main())


# -- auth ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-of-a-plausible-length-000000"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"{TOKEN}"},
        {"Authorization": "Bearer "},
    ],
)
def test_protected_routes_reject_missing_or_wrong_token(headers: dict[str, str]) -> None:
    async def main() -> None:
        async with running() as gw:
            for path in PROTECTED:
                async with gw.http.get(path, headers=headers) as resp:
                    assert resp.status == 401, path
                    assert resp.headers["WWW-Authenticate"] == "Bearer"
                    assert TOKEN not in await resp.text()

    asyncio.run(main())


def test_no_configured_token_fails_closed() -> None:
    async def main() -> None:
        async with running(token=None) as gw:
            for path in PROTECTED:
                for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer None"}):
                    async with gw.http.get(path, headers=headers) as resp:
                        assert resp.status == 401
        async with running(token="") as gw:
            async with gw.http.get("/metrics", headers={"Authorization": "Bearer "}) as resp:
                assert resp.status == 401

    asyncio.run(main())


def test_correct_token_works_and_scheme_is_case_insensitive() -> None:
    async def main() -> None:
        async with running() as gw:
            for path in PROTECTED:
                async with gw.http.get(path, headers=gw.auth()) as resp:
                    assert resp.status == 200, path
            async with gw.http.get("/metrics", headers={"Authorization": f"bearer {TOKEN}"}) as resp:
                assert resp.status == 200

    asyncio.run(main())


def test_auth_is_checked_before_query_validation() -> None:
    async def main() -> None:
        async with running() as gw:
            async with gw.http.get("/events/poll?limit=0&type=bogus") as resp:
                assert resp.status == 401

    asyncio.run(main())


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect", "/nope", "/"])
def test_no_docs_and_unknown_paths_404(path: str) -> None:
    async def main() -> None:
        async with running() as gw:
            async with gw.http.get(path, headers=gw.auth()) as resp:
                assert resp.status == 404

    asyncio.run(main())


# -- /events/poll -------------------------------------------------------------------------------


def test_poll_since_limit_and_type() -> None:
    async def main() -> None:
        async with running() as gw:
            gw.events.emit("agent", "run.start", {"run": "r1"})
            gw.events.emit("tool", "call", {"tool": "balance", "level": "read"})
            gw.events.emit("cron", "digest")
            gw.events.emit("agent", "run.end", {"run": "r1"})
            gw.events.emit("health", "signer.down")

            async def poll(query: str) -> dict:
                async with gw.http.get(f"/events/poll?{query}", headers=gw.auth()) as resp:
                    assert resp.status == 200
                    return await resp.json()

            everything = await poll("")
            assert [e["seq"] for e in everything["events"]] == [1, 2, 3, 4, 5]
            assert everything["last_seq"] == 5
            first = everything["events"][0]
            assert (first["type"], first["name"], first["data"]) == ("agent", "run.start", {"run": "r1"})
            assert isinstance(first["ts"], float)

            page = await poll("since=1&limit=2")
            assert [e["seq"] for e in page["events"]] == [2, 3] and page["last_seq"] == 3
            agents = await poll("type=agent")
            assert [e["name"] for e in agents["events"]] == ["run.start", "run.end"]
            assert agents["last_seq"] == 4
            assert await poll("since=5") == {"events": [], "last_seq": 5}
            none_of_type = await poll("type=signer&since=0")
            assert none_of_type == {"events": [], "last_seq": 5}

    asyncio.run(main())


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=1001", "since=-1", "wait=31", "wait=-1", "limit=abc", "type=bogus"]
)
def test_poll_rejects_bad_parameters_with_422(query: str) -> None:
    async def main() -> None:
        async with running() as gw:
            async with gw.http.get(f"/events/poll?{query}", headers=gw.auth()) as resp:
                assert resp.status == 422
                body = await resp.json()
            if query == "type=bogus":
                assert "unknown event type" in body["detail"] and "agent" in body["detail"]

    asyncio.run(main())


def test_poll_limit_bounds_accepted() -> None:
    async def main() -> None:
        async with running() as gw:
            for limit in (1, 1000):
                async with gw.http.get(f"/events/poll?limit={limit}", headers=gw.auth()) as resp:
                    assert resp.status == 200

    asyncio.run(main())


def test_long_poll_returns_promptly_on_event_from_another_thread() -> None:
    async def main() -> None:
        async with running() as gw:
            gw.events.emit("agent", "old")
            # First a non-matching event, which must not end a type=tool wait, then a matching one.
            timers = [
                threading.Timer(0.2, gw.events.emit, args=("agent", "other")),
                threading.Timer(0.4, gw.events.emit, args=("tool", "call", {"tool": "swap"})),
            ]
            start = time.monotonic()
            for t in timers:
                t.start()
            async with gw.http.get("/events/poll?since=1&type=tool&wait=10", headers=gw.auth()) as resp:
                assert resp.status == 200
                body = await resp.json()
            elapsed = time.monotonic() - start
            for t in timers:
                t.join()
        assert 0.35 <= elapsed < 3
        assert [e["name"] for e in body["events"]] == ["call"]
        assert body["last_seq"] == 3

    asyncio.run(main())


def test_long_poll_returns_empty_after_timeout() -> None:
    async def main() -> None:
        async with running() as gw:
            gw.events.emit("agent", "old")
            start = time.monotonic()
            async with gw.http.get("/events/poll?since=1&wait=0.5", headers=gw.auth()) as resp:
                body = await resp.json()
            elapsed = time.monotonic() - start
        assert body == {"events": [], "last_seq": 1}
        assert 0.45 <= elapsed < 3

    asyncio.run(main())


# -- /metrics -----------------------------------------------------------------------------------


def test_metrics_exposition_parses_and_updates_uptime() -> None:
    async def main() -> None:
        async with running() as gw:
            gw.metrics.inc("owlia_messages_total", channel='tele"gram\n')
            for seconds in (0.003, 0.2, 0.2, 7, 100):
                gw.metrics.observe("owlia_tool_seconds", seconds, level="sign")
            await asyncio.sleep(0.05)
            async with gw.http.get("/metrics", headers=gw.auth()) as resp:
                assert resp.status == 200
                assert resp.headers["Content-Type"] == PROMETHEUS_CONTENT_TYPE
                text = await resp.text()
        exp = parse(text)
        assert exp.types["owlia_uptime_seconds"] == "gauge"
        assert exp.get("owlia_uptime_seconds") > 0
        assert exp.get("owlia_messages_total", channel='tele"gram\n') == 1
        buckets = sorted(
            (float(dict(labels)["le"]), value)
            for labels, value in exp.series("owlia_tool_seconds_bucket").items()
        )
        counts = [value for _, value in buckets]
        assert counts == sorted(counts), "buckets must be cumulative"
        assert buckets[0] == (0.005, 1) and buckets[-1] == (float("inf"), 5)
        assert dict(buckets)[0.25] == 3
        assert exp.get("owlia_tool_seconds_count", level="sign") == 5

    asyncio.run(main())
