"""`owlia bridge serve`: run the bridge under uvicorn; loopback by default, TLS when exposed."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from companion_bridge import webapp
from companion_bridge.app import Bridge, create_app
from companion_bridge.limits import BridgeLimits, Guard
from companion_bridge.push import Pusher
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
    push: bool = True  # Web Push to companion web apps that subscribed (VAPID key in home)
    push_subject: str = "mailto:owliabot@localhost"
    push_allow_loopback_http: bool = False  # tests: a local push service over plain http

    def check(self) -> None:
        """Off loopback, the bridge speaks TLS or not at all."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise BridgeConfigError("give both --tls-cert and --tls-key, or neither")
        if self.tls_cert is None and not _is_loopback(self.host):
            raise BridgeConfigError(
                f"{self.host} is not loopback: serving there needs --tls-cert and --tls-key"
            )
        try:
            webapp.check_built()  # the phone's companion is served from here: a blank page helps nobody
        except webapp.WebAppMissing as exc:
            raise BridgeConfigError(str(exc)) from None
        if self.push and not self.push_subject.startswith(("mailto:", "https://")):
            raise BridgeConfigError(
                "--push-contact must be a mailto: or https: URL (push services reach the operator there)"
            )

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
    pusher = (
        Pusher(options.home, options.push_subject, options.push_allow_loopback_http) if options.push else None
    )
    bridge = Bridge(link, queue, tokens, Guard(options.limits), pusher)
    config = uvicorn.Config(
        create_app(bridge),
        host=options.host,
        port=options.port,
        log_level="warning",
        ssl_certfile=str(options.tls_cert) if options.tls_cert else None,
        ssl_keyfile=str(options.tls_key) if options.tls_key else None,
        ws_max_size=options.limits.max_message_bytes,
        ws="websockets-sansio",
        lifespan="on",
        # uvicorn would otherwise rewrite the client address from X-Forwarded-For for any loopback
        # peer; the bridge decides whom to believe itself (`BridgeLimits.trusted_proxies`).
        proxy_headers=False,
        loop=loop_name(),  # as every owlia process: uvloop unless OWLIA_EVENT_LOOP=asyncio
    )
    return bridge, config


def listen(options: BridgeOptions) -> socket.socket:
    """Bind before anything starts, so a taken port is one clear error instead of a hung process
    (uvicorn, failing to bind after its lifespan started the signer pump, ignored Ctrl-C and SIGTERM)."""
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((options.host, options.port))
    except OSError as exc:
        sock.close()
        raise BridgeConfigError(
            f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}. "
            "Another process may hold the port (`ss -ltnp` shows which); stop it or pick "
            "another with --port"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(options: BridgeOptions) -> None:
    _, config = build(options)
    sock = listen(options)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
