"""`owlia bridge serve`: run the bridge under uvicorn; loopback by default, TLS when exposed."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from companion_bridge.app import Bridge, create_app
from companion_bridge.limits import BridgeLimits, Guard
from companion_bridge.queue import DeliveryQueue
from companion_bridge.signer_link import SignerLink
from companion_bridge.tokens import TokenIssuer
from policies.kernel.aio import loop_name


class BridgeConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class BridgeOptions:
    home: Path  # 0700: the delivery queue lives here
    signer_socket: Path
    signer_token: str
    host: str = "127.0.0.1"
    port: int = 8765
    tls_cert: Path | None = None
    tls_key: Path | None = None
    token_ttl_seconds: float = 300.0
    poll_timeout: float = 20.0
    limits: BridgeLimits = field(default_factory=BridgeLimits)

    def check(self) -> None:
        """Off loopback, the bridge speaks TLS or not at all."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise BridgeConfigError("give both --tls-cert and --tls-key, or neither")
        if self.tls_cert is None and not _is_loopback(self.host):
            raise BridgeConfigError(f"{self.host} is not loopback: serving there needs --tls-cert and --tls-key")

    @property
    def audience(self) -> str:
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{self.host}:{self.port}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build(options: BridgeOptions) -> tuple[Bridge, uvicorn.Config]:
    options.check()
    queue = DeliveryQueue(options.home / "bridge.db")
    link = SignerLink(options.signer_socket, options.signer_token, poll_timeout=options.poll_timeout)
    tokens = TokenIssuer(options.audience, options.token_ttl_seconds)
    bridge = Bridge(link, queue, tokens, Guard(options.limits))
    config = uvicorn.Config(
        create_app(bridge), host=options.host, port=options.port, log_level="warning",
        ssl_certfile=str(options.tls_cert) if options.tls_cert else None,
        ssl_keyfile=str(options.tls_key) if options.tls_key else None,
        ws_max_size=options.limits.max_message_bytes, ws="websockets-sansio", lifespan="on",
        # uvicorn would otherwise rewrite the client address from X-Forwarded-For for any loopback
        # peer; the bridge decides whom to believe itself (`BridgeLimits.trusted_proxies`).
        proxy_headers=False,
        loop=loop_name(),  # as every owlia process: uvloop unless OWLIA_EVENT_LOOP=asyncio
    )
    return bridge, config


def serve(options: BridgeOptions) -> None:
    _, config = build(options)
    uvicorn.Server(config).run()
