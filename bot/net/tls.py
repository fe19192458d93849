"""One TLS client context for every httpx client in the process.

httpx builds a fresh context per client and loads the whole CA bundle into each (about 25 ms of CPU
and some memory apiece); the Telegram client alone opens two. A context holds no per-connection
state, so one, built the way httpx builds its default (SSL_CERT_FILE / SSL_CERT_DIR, else
certifi's bundle; certificate and host name checked), serves them all.
"""

from __future__ import annotations

import ssl
from functools import cache


@cache
def client_context() -> ssl.SSLContext:
    import httpx

    context = httpx.create_ssl_context()
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname  # never a weaker default
    return context
