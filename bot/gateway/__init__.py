"""The loopback control plane: health, runtime events and metrics over HTTP.

Bound to 127.0.0.1 by default; every route except /health needs the bearer token, and the
gateway refuses to listen on a non-loopback address without a strong one.
"""

from bot.gateway.app import PROMETHEUS_CONTENT_TYPE, create_app
from bot.gateway.auth import MIN_TOKEN_LENGTH, BearerAuth, load_or_create_token
from bot.gateway.health import ComponentHealth, combine_checks
from bot.gateway.server import (
    GatewayConfigError,
    RunningGateway,
    check_bind,
    is_loopback,
    serve,
    start_in_background,
)

__all__ = [
    "MIN_TOKEN_LENGTH",
    "PROMETHEUS_CONTENT_TYPE",
    "BearerAuth",
    "ComponentHealth",
    "GatewayConfigError",
    "RunningGateway",
    "check_bind",
    "combine_checks",
    "create_app",
    "is_loopback",
    "load_or_create_token",
    "serve",
    "start_in_background",
]
