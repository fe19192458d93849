"""The Telegram client's TLS: both connection pools share the one process-wide context
(bot/net/tls.py), and that context still refuses a server it cannot verify: a self-signed
"api.telegram.org" on loopback never sees a request, so never sees the bot token in the URL."""

from __future__ import annotations

import asyncio
import http.server
import ssl
import threading

import httpx
import pytest
from hypothesis import given, strategies as st

from bot.channels.telegram.api import make_bot
from bot.channels.telegram.botapi import NetworkError
from bot.net.tls import client_context, context_for, trusting_nobody
from tests.fakes.certificates import self_signed

TOKEN = "123456:" + "A" * 35


def _pools(bot) -> list[ssl.SSLContext]:
    """The SSL context of each of the bot's two httpx clients (replies, the long poll)."""
    return [
        client._transport._pool._ssl_context  # noqa: SLF001 - what the pools really use
        for client in (bot._client, bot._poll_client)
    ]  # noqa: SLF001


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


def test_a_plain_http_bot_api_server_loads_no_ca_bundle_and_trusts_no_certificate() -> None:
    """A local Bot API server on http:// never needs TLS: its pools skip the CA bundle load (~25 ms of
    `owlia start`), and the context they hold instead refuses every certificate (fails closed)."""
    contexts = _pools(make_bot(TOKEN, "http://127.0.0.1:8081"))
    assert contexts[0] is contexts[1] is trusting_nobody()
    assert trusting_nobody() is not client_context()
    assert trusting_nobody().verify_mode is ssl.CERT_REQUIRED and trusting_nobody().check_hostname
    assert trusting_nobody().get_ca_certs() == [] and trusting_nobody().cert_store_stats()["x509_ca"] == 0
    assert trusting_nobody().minimum_version >= ssl.TLSVersion.TLSv1_2


@given(st.text(max_size=40))
def test_only_a_plain_http_base_goes_without_the_ca_bundle(rest: str) -> None:
    for scheme in ("https://", "HTTPS://", "ftp://", "http:/x", "httpx://", " http://", "//"):
        assert context_for(scheme + rest) is client_context()
    assert context_for("http://" + rest) is context_for("HTTP://" + rest) is trusting_nobody()


def test_the_context_that_trusts_nobody_refuses_a_server_a_trusting_client_accepts(tmp_path) -> None:
    """Attack: were the client without the CA bundle ever to meet TLS (a redirect is not followed; a
    proxy might), the handshake fails: even a certificate its own test trusts is refused."""
    cert, key = self_signed(tmp_path, "127.0.0.1", "local")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"https://127.0.0.1:{server.server_address[1]}/"
    trusting_this_one = ssl.create_default_context(cafile=str(cert))
    try:
        with httpx.Client(verify=trusting_this_one) as client:  # the control: the server is reachable
            assert client.get(url).status_code == 501
        with httpx.Client(verify=trusting_nobody()) as client, pytest.raises(httpx.ConnectError) as refused:
            client.get(url)
        assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
    finally:
        server.shutdown()
        server.server_close()
