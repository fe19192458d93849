"""The Telegram client's TLS: both connection pools share the one process-wide context
(bot/net/tls.py), and that context still refuses a server it cannot verify: a self-signed
"api.telegram.org" on loopback never sees a request, so never sees the bot token in the URL."""

from __future__ import annotations

import asyncio
import http.server
import ssl
import threading

import pytest

from bot.channels.telegram.api import make_bot
from bot.channels.telegram.botapi import NetworkError
from bot.net.tls import client_context
from tests.fakes.certificates import self_signed

TOKEN = "123456:" + "A" * 35


def _pools(bot) -> list[ssl.SSLContext]:
    """The SSL context of each of the bot's two httpx clients (replies, the long poll)."""
    return [client._transport._pool._ssl_context  # noqa: SLF001 - what the pools really use
            for client in (bot._client, bot._poll_client)]  # noqa: SLF001


def test_both_pools_use_the_one_verifying_context() -> None:
    contexts = _pools(make_bot(TOKEN, None))
    assert contexts[0] is contexts[1] is client_context()
    assert client_context().verify_mode is ssl.CERT_REQUIRED and client_context().check_hostname
    assert client_context().get_ca_certs() or client_context().cert_store_stats()["x509_ca"] > 0


def test_a_server_with_a_certificate_nobody_signed_is_refused_before_any_request(tmp_path) -> None:
    cert, key = self_signed(tmp_path, "api.telegram.org", "tg")
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        bot = make_bot(TOKEN, f"https://127.0.0.1:{server.server_address[1]}")

        async def call() -> None:
            try:
                await bot.get_me()
            finally:
                await bot.close()

        with pytest.raises(NetworkError) as caught:
            asyncio.run(call())
        assert TOKEN not in str(caught.value)
    finally:
        server.shutdown()
        server.server_close()
    assert seen == []
