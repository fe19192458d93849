"""Point one discord.py client at other REST and gateway URLs (a local server in tests).

discord.py keeps its URLs in class attributes (`Route.BASE`, `DiscordWebSocket.DEFAULT_GATEWAY`);
setting those would redirect every client in the process and outlive the test that set them. Here
the URLs are rewritten per client instead: REST calls in its HTTPClient, the gateway in its
ws_connect, and interaction responses/followups in a webhook adapter that is installed only in the
context of that client's tasks.
"""

from __future__ import annotations

import contextvars
import copy
from dataclasses import dataclass
from typing import Any

import yarl
from discord.http import HTTPClient, Route
from discord.webhook.async_ import AsyncWebhookAdapter, async_context

DEFAULT_BASE = Route.BASE


@dataclass(frozen=True)
class Endpoints:
    api_base: str | None = None  # e.g. http://127.0.0.1:PORT/api/v10
    gateway_url: str | None = None  # e.g. ws://127.0.0.1:PORT/gateway

    @property
    def custom(self) -> bool:
        return bool(self.api_base or self.gateway_url)

    def rebase(self, route: Route) -> Route:
        if not self.api_base or not route.url.startswith(DEFAULT_BASE):
            return route
        moved = copy.copy(route)
        moved.url = self.api_base.rstrip("/") + route.url[len(DEFAULT_BASE) :]
        return moved

    def gateway(self, url: str) -> str:
        if not self.gateway_url:
            return url
        return str(yarl.URL(self.gateway_url).with_query(yarl.URL(url).query))


class RoutedHTTPClient(HTTPClient):
    def __init__(self, *args: Any, endpoints: Endpoints, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.endpoints = endpoints

    async def request(self, route: Route, **kwargs: Any) -> Any:
        return await super().request(self.endpoints.rebase(route), **kwargs)

    async def ws_connect(self, url: str, *, compress: int = 0) -> Any:
        return await super().ws_connect(self.endpoints.gateway(url), compress=compress)


class RoutedWebhookAdapter(AsyncWebhookAdapter):
    def __init__(self, endpoints: Endpoints) -> None:
        super().__init__()
        self.endpoints = endpoints

    async def request(self, route: Route, *args: Any, **kwargs: Any) -> Any:
        return await super().request(self.endpoints.rebase(route), *args, **kwargs)


def install_webhook_adapter(endpoints: Endpoints) -> contextvars.Token | None:
    """For the calling task and the tasks it starts: interaction responses go to `endpoints`."""
    if not endpoints.api_base:
        return None
    return async_context.set(RoutedWebhookAdapter(endpoints))


def remove_webhook_adapter(token: contextvars.Token | None) -> None:
    if token is not None:
        async_context.reset(token)
