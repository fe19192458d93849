"""A real local HTTP server (aiohttp.web on 127.0.0.1, random port) for the fetcher tests.

It runs inside the test's own event loop (each test drives `asyncio.run`) and records every
request it receives, so a test can prove a refused fetch never reached it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

from bot.net.ssrf import FetchPolicy

PAGE = """<!doctype html><html><head><title>Owl prices</title><style>body{color:red}</style>
<script>steal(document.cookie)</script></head><body>
<h1>ETH   price</h1><p>Today ETH is <b>up</b>, see <a href="/more">the details</a>.</p>
<noscript>enable js</noscript><template><p>hidden template</p></template>
<ul><li>one</li><li>two</li></ul><p>caf&eacute; &amp; more</p></body></html>"""


@dataclass
class Seen:
    method: str
    path: str
    host: str
    body: bytes
    headers: dict[str, str]


@dataclass
class LocalServer:
    port: int
    seen: list[Seen] = field(default_factory=list)

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def policy(self, **overrides: object) -> FetchPolicy:
        values: dict[str, object] = {"allow_private": ("127.0.0.1/32",), "allowed_ports": (self.port,)}
        values.update(overrides)
        return FetchPolicy(**values)  # type: ignore[arg-type]


def _app(server: LocalServer) -> web.Application:
    @web.middleware
    async def record(request: web.Request, handler):  # type: ignore[no-untyped-def]
        body = await request.read()
        server.seen.append(
            Seen(
                request.method, request.path_qs, request.headers.get("Host", ""), body, dict(request.headers)
            )
        )
        return await handler(request)

    async def page(_: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def json_doc(_: web.Request) -> web.Response:
        return web.json_response({"eth": "3120.55"})

    async def latin1(_: web.Request) -> web.Response:
        return web.Response(body="café".encode("latin-1"), content_type="text/plain", charset="iso-8859-1")

    async def odd_charset(_: web.Request) -> web.Response:
        return web.Response(body="ok ✓".encode(), headers={"Content-Type": "text/plain; charset=base64"})

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="x" * int(request.query.get("n", "100000")), content_type="text/plain")

    async def binary(_: web.Request) -> web.Response:
        return web.Response(body=b"\x00\x01\x02", content_type="application/octet-stream")

    async def stall(_: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response(text="too late")

    async def redirect(request: web.Request) -> web.Response:
        status = int(request.query.get("status", "302"))
        return web.Response(status=status, headers={"Location": request.query["to"]})

    async def loop(_: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/loop"})

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        key = request.headers.get("X-Api-Key", "-")
        return web.Response(text=f"{request.method} {body.decode()} auth={key}")

    app = web.Application(middlewares=[record])
    app.router.add_get("/", page)
    app.router.add_get("/json", json_doc)
    app.router.add_get("/latin1", latin1)
    app.router.add_get("/big", big)
    app.router.add_get("/odd-charset", odd_charset)
    app.router.add_get("/binary", binary)
    app.router.add_get("/stall", stall)
    app.router.add_route("*", "/redirect", redirect)
    app.router.add_get("/loop", loop)
    app.router.add_route("*", "/echo", echo)
    return app


@contextlib.asynccontextmanager
async def local_server() -> AsyncIterator[LocalServer]:
    server = LocalServer(port=0)
    runner = web.AppRunner(_app(server), shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.port = runner.addresses[0][1]
    try:
        yield server
    finally:
        await runner.cleanup()
