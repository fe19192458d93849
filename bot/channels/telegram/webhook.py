"""Webhook mode: Telegram POSTs each update to us instead of us polling for it.

The endpoint is reachable by anyone who finds the URL, so every request must carry the secret we
gave Telegram in setWebhook (header X-Telegram-Bot-Api-Secret-Token), compared in constant time;
anything else is 401 and never parsed. The secret is fresh random bytes on every start, so it is
never stored and a leaked one dies with the process. Updates are acknowledged at once and handled
in the background (Telegram redelivers what is not acknowledged in time; dedupe drops those).
"""

from __future__ import annotations

import hmac
import logging
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from aiohttp import web

from bot.channels.telegram.botapi import BadUpdate, Update
from bot.channels.telegram.routing import ALLOWED_UPDATES
from bot.config import TelegramSettings
from policies.kernel import safejson

if TYPE_CHECKING:
    from bot.channels.telegram.channel import TelegramChannel

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_BODY = 1 << 20


class WebhookServer:
    def __init__(self, channel: TelegramChannel, settings: TelegramSettings) -> None:
        if not settings.webhook_url or not settings.webhook_url.startswith(("https://", "http://")):
            raise ValueError("telegram webhook mode needs bot.channels.telegram.webhook_url (the public URL)")
        self.channel = channel
        self.settings = settings
        self.url: str = settings.webhook_url
        self.path = urlsplit(self.url).path or "/"
        self._secret = secrets.token_urlsafe(32)
        self._runner: web.AppRunner | None = None
        self.port = settings.webhook_port

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post(self.path, self._receive)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.webhook_host, self.settings.webhook_port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        await self.channel.api.call(
            "setWebhook",
            lambda: self.channel.bot.set_webhook(
                self.url, secret_token=self._secret, allowed_updates=list(ALLOWED_UPDATES)
            ),
        )

    async def stop(self) -> None:
        """Stop listening; the webhook stays registered so Telegram queues updates until we return."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self._secret.encode()):
            log.warning("telegram webhook: request without the right secret token refused")
            return web.Response(status=401)
        try:
            update = Update.parse(safejson.loads(await request.read()))  # the body is capped at MAX_BODY
        except BadUpdate as exc:
            log.warning("telegram webhook: malformed update refused (%s)", exc)
            return web.Response(status=400)
        except ValueError:  # not UTF-8 JSON, or nested too deep
            return web.Response(status=400)
        self.channel.dispatch(update)
        return web.Response(status=200)
