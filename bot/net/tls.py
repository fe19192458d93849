"""One TLS client context for every httpx client in the process.

httpx builds a fresh context per client and loads the whole CA bundle into each (about 25 ms of CPU
and some memory apiece); the Telegram client alone opens two. A context holds no per-connection
state, so one, built the way httpx builds its default (SSL_CERT_FILE / SSL_CERT_DIR, else
certifi's bundle; certificate and host name checked), serves them all.

A client whose every URL is plain `http://` (a local Bot API server) never speaks TLS, so it does
not load the bundle at all (`context_for`): it gets a context that checks certificates and host
names but trusts no authority, which no TLS server can satisfy: should it ever meet TLS, it fails
closed.
"""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def client_context() -> ssl.SSLContext:
    context = httpx.create_ssl_context()
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname  # never a weaker default
    return context


@cache
def trusting_nobody() -> ssl.SSLContext:
    """Verifies everything against an empty trust store: refuses every certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and host names checked by default
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    return context


def context_for(base_url: str) -> ssl.SSLContext:
    """The context for a client that only calls URLs under `base_url` (and follows no redirect)."""
    return trusting_nobody() if base_url.lower().startswith("http://") else client_context()
