"""Bind policy, server lifecycle and the token file."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from pathlib import Path

import aiohttp
import pytest

from bot.gateway import (
    GatewayConfigError,
    check_bind,
    create_app,
    load_or_create_token,
    serve,
    start_in_background,
)
from bot.observability.events import EventBus
from bot.observability.metrics import default_metrics
from policies.kernel.files import PermissionProblem
from tests.bot.gateway.harness import TOKEN, all_ok


def _app(token: str | None = TOKEN):
    return create_app(events=EventBus(), metrics=default_metrics(), health=all_ok, token=token)


LOOPBACK = ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"]
EXPOSED = ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "", "localhost.evil"]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_needs_no_token(host: str) -> None:
    check_bind(host, None)


@pytest.mark.parametrize("host", EXPOSED)
@pytest.mark.parametrize("token", [None, "", "short", "x" * 31])
def test_non_loopback_refused_without_a_strong_token(host: str, token: str | None) -> None:
    with pytest.raises(GatewayConfigError) as err:
        check_bind(host, token)
    if token:
        assert token not in str(err.value)


def test_non_loopback_allowed_with_a_strong_token() -> None:
    check_bind("0.0.0.0", "x" * 32)
    check_bind("::", TOKEN)


def test_serve_refuses_before_binding() -> None:
    with pytest.raises(GatewayConfigError):
        asyncio.run(serve(_app(None), "0.0.0.0", 0, token=None))
    with pytest.raises(GatewayConfigError):
        asyncio.run(start_in_background(_app("short"), "0.0.0.0", 0, token="short"))


def test_port_in_use_is_an_error_not_an_exit() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(GatewayConfigError):
            asyncio.run(start_in_background(_app(), "127.0.0.1", port, token=TOKEN))


def test_background_server_serves_and_stops() -> None:
    async def main() -> int:
        gw = await start_in_background(_app(), "127.0.0.1", 0, token=TOKEN)
        assert gw.port > 0 and gw.url == f"http://127.0.0.1:{gw.port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{gw.url}/health") as resp:
                assert resp.status == 200
                assert "server" not in {h.lower() for h in resp.headers}
        await gw.stop()
        return gw.port

    port = asyncio.run(main())
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listening any more


def test_stop_does_not_hang_on_an_open_long_poll() -> None:
    async def main() -> None:
        gw = await start_in_background(_app(), "127.0.0.1", 0, token=TOKEN)
        async with aiohttp.ClientSession() as http:
            pending = asyncio.create_task(
                http.get(f"{gw.url}/events/poll?wait=30", headers={"Authorization": f"Bearer {TOKEN}"})
            )
            await asyncio.sleep(0.2)
            await asyncio.wait_for(gw.stop(timeout=1.0), 5)
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)

    asyncio.run(main())


# -- token file ---------------------------------------------------------------------------------


def test_token_file_is_created_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "gateway" / "token"
    token = load_or_create_token(path)
    assert len(token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_or_create_token(path) == token
    check_bind("0.0.0.0", token)  # a generated token is strong enough for a non-loopback bind


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660])
def test_loose_token_file_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "token"
    load_or_create_token(path)
    os.chmod(path, mode)
    with pytest.raises(PermissionProblem):
        load_or_create_token(path)


def test_symlinked_or_short_token_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    load_or_create_token(real)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(PermissionProblem):
        load_or_create_token(link)
    short = tmp_path / "short"
    short.write_text("abc\n")
    os.chmod(short, 0o600)
    with pytest.raises(ValueError):
        load_or_create_token(short)


# -- DNS rebinding ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host,status",
    [
        ("127.0.0.1", 200),
        ("localhost", 200),
        ("evil.example", 400),
        ("127.0.0.1.nip.io", 400),
        ("attacker.test:8787", 400),
    ],
)
def test_host_header_must_name_the_gateway(host: str, status: int) -> None:
    """A page whose DNS name rebinds to 127.0.0.1 sends its own name in Host: refused, even for /health."""

    async def main() -> None:
        gw = await start_in_background(_app(), "127.0.0.1", 0, token=TOKEN)
        try:
            name = host if ":" in host else f"{host}:{gw.port}"
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{gw.url}/health", headers={"Host": name}) as resp:
                    assert resp.status == status
                    if status != 200:
                        assert "components" not in await resp.text()
        finally:
            await gw.stop()

    asyncio.run(main())
