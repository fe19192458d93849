"""A local Discord: the gateway WebSocket and the REST API, enough for the real discord.py client.

The bot under test runs the real `discord.Client` against it, so tests exercise discord.py's own
handshake, event parsing, rate-limit handling, views and application commands rather than our
guess of them. Tests inject what users do (a DM, a guild message, a slash command, a button press),
redeliver an event verbatim, make the next matching REST call answer 429, and afterwards inspect
every REST call the bot made, with its time.

    server = FakeDiscord()
    await server.start()
    ... DiscordSettings(api_base=server.api_base, gateway_url=server.gateway_url) ...
    await server.wait_identified()
    event = await server.dm(user_id=42, content="hi")
    await server.redeliver(event)
    await server.wait_for(lambda: server.sent_to(server.dm_channel(42)))
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

API = "/api/v10"
BOT_ID = 900_000_000_000_000_001
APP_ID = 900_000_000_000_000_002
BOT_TOKEN = "fake.discord.bot-token"


@dataclass
class Call:
    """One REST request the bot made."""

    method: str
    path: str  # without the /api/v10 prefix
    body: Any
    at: float  # time.monotonic()
    status: int = 200


@dataclass
class RateLimit:
    method: str
    pattern: re.Pattern[str]
    retry_after: float
    remaining: int = 1
    is_global: bool = False


@dataclass
class Stored:
    """A message the bot created, with every version of its content."""

    id: int
    channel_id: int
    versions: list[str]
    components: list[Any] = field(default_factory=list)
    flags: int = 0

    @property
    def content(self) -> str:
        return self.versions[-1]


def _iso(ts: float | None = None) -> str:
    return dt.datetime.fromtimestamp(ts or time.time(), dt.timezone.utc).isoformat()


def user(user_id: int, name: str | None = None, *, bot: bool = False) -> dict[str, Any]:
    name = name or f"user{user_id}"
    return {
        "id": str(user_id),
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
    }


class FakeDiscord:
    def __init__(self, *, heartbeat_interval: float = 41.25, echo: bool = True) -> None:
        self.heartbeat_interval = heartbeat_interval
        self.echo = echo
        self.on_create: Callable[[Stored], Awaitable[None]] | None = None
        self.calls: list[Call] = []
        self.messages: dict[int, Stored] = {}  # what the bot posted, by message id
        self.interaction_responses: dict[int, list[dict[str, Any]]] = {}
        self.identifies: list[dict[str, Any]] = []
        self.heartbeats = 0
        self.resumes: list[dict[str, Any]] = []
        self.commands: list[dict[str, Any]] = []  # the last bulk-overwritten command set
        self._ids = itertools.count(1_000_000_000_000_000_000)
        self._seq = 0
        self._sockets: list[web.WebSocketResponse] = []
        self._limits: list[RateLimit] = []
        self._identified = asyncio.Event()
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._interaction_tokens: dict[str, int] = {}  # token -> interaction id
        self._interaction_channels: dict[int, int] = {}  # interaction id -> channel id
        self._pressed: dict[int, int] = {}  # button interaction id -> the message whose button it was
        self._originals: dict[int, int] = {}  # interaction id -> its original response message
        self.port = 0
        self.bot_user = user(BOT_ID, "owlia", bot=True)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeDiscord:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/gateway", self._gateway)
        r = app.router
        r.add_get(API + "/gateway", self._get_gateway)
        r.add_get(API + "/gateway/bot", self._get_gateway_bot)
        r.add_get(API + "/users/@me", self._me)
        r.add_get(API + "/oauth2/applications/@me", self._application)
        r.add_post(API + "/users/@me/channels", self._open_dm)
        r.add_post(API + "/channels/{channel}/messages", self._create_message)
        r.add_patch(API + "/channels/{channel}/messages/{message}", self._edit_message)
        r.add_post(API + "/channels/{channel}/typing", self._typing)
        r.add_put(API + "/applications/{app}/commands", self._bulk_commands)
        r.add_post(API + "/interactions/{id}/{token}/callback", self._interaction_callback)
        r.add_post(API + "/webhooks/{app}/{token}", self._followup)
        r.add_get(API + "/webhooks/{app}/{token}/messages/{message}", self._get_webhook_message)
        r.add_patch(API + "/webhooks/{app}/{token}/messages/{message}", self._edit_webhook_message)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # -- what tests do -----------------------------------------------------------------------

    async def wait_identified(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(self._identified.wait(), timeout)

    async def wait_for(self, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Until `condition()` is truthy (re-checked whenever the bot calls the API)."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                last = [(c.method, c.path, c.status) for c in self.calls[-8:]]
                raise AssertionError(f"timed out waiting; the bot's last calls: {last}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 0.05))
            except asyncio.TimeoutError:
                pass

    def dm_channel(self, user_id: int) -> int:
        return user_id + 7  # one DM channel per user, derived so tests can name it

    async def dm(self, user_id: int, content: str, *, message_id: int | None = None) -> dict[str, Any]:
        data = self._message(self.dm_channel(user_id), user(user_id), content, message_id=message_id)
        return await self.dispatch("MESSAGE_CREATE", data)

    async def guild_message(
        self, user_id: int, content: str, *, guild_id: int, channel_id: int, mention: bool = False
    ) -> dict[str, Any]:
        text = f"<@{BOT_ID}> {content}" if mention else content
        data = self._message(
            channel_id, user(user_id), text, guild_id=guild_id, mentions=[self.bot_user] if mention else []
        )
        data["member"] = {"roles": [], "joined_at": _iso(), "deaf": False, "mute": False, "flags": 0}
        return await self.dispatch("MESSAGE_CREATE", data)

    async def slash(
        self,
        user_id: int,
        name: str,
        options: dict[str, str] | None = None,
        *,
        guild_id: int | None = None,
        channel_id: int | None = None,
        context: int | None = None,
    ) -> dict[str, Any]:
        """A slash command; `context` 2 is a user-installed command run in some other private chat."""
        data = self._interaction(2, user_id, guild_id, channel_id)
        if context is not None:
            data["context"] = context
        data["data"] = {
            "id": str(next(self._ids)),
            "name": name,
            "type": 1,
            "options": [{"name": k, "type": 3, "value": v} for k, v in (options or {}).items()],
        }
        return await self.dispatch("INTERACTION_CREATE", data)

    async def press(
        self, user_id: int, message: Stored, custom_id: str, *, guild_id: int | None = None
    ) -> dict[str, Any]:
        data = self._interaction(3, user_id, guild_id, message.channel_id)
        data["data"] = {"custom_id": custom_id, "component_type": 2}
        data["message"] = self._message_payload(message)
        self._pressed[int(data["id"])] = message.id
        return await self.dispatch("INTERACTION_CREATE", data)

    async def redeliver(self, event: dict[str, Any]) -> dict[str, Any]:
        """Send the same event again (a new sequence number, same payload), as Discord may."""
        return await self.dispatch(event["t"], event["d"])

    async def dispatch(self, name: str, data: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        event = {"op": 0, "t": name, "s": self._seq, "d": data}
        for ws in list(self._sockets):
            await ws.send_str(json.dumps(event))
        return event

    async def drop(self, code: int = 4000) -> None:
        """Close every gateway connection (4000: a resumable error); the client should RESUME."""
        for ws in list(self._sockets):
            await ws.close(code=code)

    def rate_limit_next(
        self, method: str, path_regex: str, retry_after: float, *, times: int = 1, is_global: bool = False
    ) -> None:
        """The next `times` calls matching answer 429 with this retry_after."""
        self._limits.append(RateLimit(method, re.compile(path_regex), retry_after, times, is_global))

    def calls_to(self, method: str, path_regex: str) -> list[Call]:
        pattern = re.compile(path_regex)
        return [c for c in self.calls if c.method == method and pattern.fullmatch(c.path)]

    def sent_to(self, channel_id: int) -> list[Stored]:
        return [m for m in self.messages.values() if m.channel_id == channel_id]

    def buttons(self, message: Stored) -> list[dict[str, Any]]:
        return [c for row in message.components for c in row.get("components", [])]

    # -- gateway -----------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        hello = {"op": 10, "d": {"heartbeat_interval": int(self.heartbeat_interval * 1000)}}
        await ws.send_str(json.dumps(hello))
        try:
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    break
                payload = json.loads(msg.data)
                op = payload.get("op")
                if op == 1:
                    self.heartbeats += 1
                    await ws.send_str(json.dumps({"op": 11}))
                elif op == 2:
                    self.identifies.append(payload["d"])
                    self._seq += 1
                    ready = {
                        "v": 10,
                        "user": self.bot_user,
                        "guilds": [],
                        "session_id": "fake-session",
                        "resume_gateway_url": self.gateway_url,
                        "private_channels": [],
                        "application": {"id": str(APP_ID), "flags": 0},
                    }
                    await ws.send_str(json.dumps({"op": 0, "t": "READY", "s": self._seq, "d": ready}))
                    self._identified.set()
                elif op == 6:
                    self.resumes.append(payload["d"])
                    self._seq += 1
                    await ws.send_str(json.dumps({"op": 0, "t": "RESUMED", "s": self._seq, "d": {}}))
        finally:
            self._sockets.remove(ws)
        return ws

    # -- REST --------------------------------------------------------------------------------

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.path.startswith(API):
            return await handler(request)
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        path = request.path[len(API) :]
        call = Call(request.method, path, body, time.monotonic())
        self.calls.append(call)
        self._changed.set()
        if (
            request.headers.get("Authorization") != f"Bot {BOT_TOKEN}"
            and "/webhooks/" not in path
            and "/interactions/" not in path
        ):
            call.status = 401
            return _json({"message": "401: Unauthorized", "code": 0}, 401)
        for limit in self._limits:
            if limit.remaining > 0 and limit.method == request.method and limit.pattern.fullmatch(path):
                limit.remaining -= 1
                call.status = 429
                headers = {
                    "X-RateLimit-Limit": "5",
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset-After": str(limit.retry_after),
                    "X-RateLimit-Bucket": "fakebucket",
                    "X-RateLimit-Scope": "global" if limit.is_global else "user",
                    "Retry-After": str(max(1, round(limit.retry_after))),
                }
                if limit.is_global:
                    headers["X-RateLimit-Global"] = "true"
                return _json(
                    {
                        "message": "You are being rate limited.",
                        "retry_after": limit.retry_after,
                        "global": limit.is_global,
                    },
                    429,
                    headers,
                )
        response = await handler(request)
        self._changed.set()
        return response

    async def _get_gateway(self, request: web.Request) -> web.Response:
        return _json({"url": self.gateway_url})

    async def _get_gateway_bot(self, request: web.Request) -> web.Response:
        return _json(
            {
                "url": self.gateway_url,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            }
        )

    async def _me(self, request: web.Request) -> web.Response:
        return _json(self.bot_user)

    async def _application(self, request: web.Request) -> web.Response:
        return _json(
            {
                "id": str(APP_ID),
                "name": "owlia",
                "icon": None,
                "description": "",
                "bot_public": False,
                "bot_require_code_grant": False,
                "verify_key": "00",
                "flags": 0,
                "owner": user(1, "owner"),
                "team": None,
                "summary": "",
                "rpc_origins": [],
            }
        )

    async def _open_dm(self, request: web.Request) -> web.Response:
        body = await request.json()
        recipient = int(body["recipient_id"])
        return _json(
            {
                "id": str(self.dm_channel(recipient)),
                "type": 1,
                "last_message_id": None,
                "recipients": [user(recipient)],
            }
        )

    async def _create_message(self, request: web.Request) -> web.Response:
        body = await request.json()
        channel = int(request.match_info["channel"])
        if not isinstance(body.get("content"), str) or len(body["content"]) > 2000:
            return _json({"message": "Invalid Form Body", "code": 50035}, 400)
        stored = Stored(next(self._ids), channel, [body["content"]], body.get("components") or [])
        self.messages[stored.id] = stored
        payload = self._message_payload(stored)
        if self.on_create is not None:  # e.g. a user who presses a button before the bot hears back
            await self.on_create(stored)
        if self.echo:  # like Discord, the gateway also tells the bot about its own message
            await self.dispatch("MESSAGE_CREATE", payload)
        return _json(payload)

    async def _edit_message(self, request: web.Request) -> web.Response:
        stored = self.messages.get(int(request.match_info["message"]))
        if stored is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        return self._apply_edit(stored, await request.json())

    async def _typing(self, request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def _bulk_commands(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.commands = body
        out = [
            {
                **c,
                "id": str(next(self._ids)),
                "application_id": str(APP_ID),
                "version": "1",
                "default_member_permissions": None,
                "type": c.get("type", 1),
            }
            for c in body
        ]
        return _json(out)

    async def _interaction_callback(self, request: web.Request) -> web.Response:
        interaction_id = int(request.match_info["id"])
        if self._interaction_tokens.get(request.match_info["token"]) != interaction_id:
            return _json({"message": "Unknown interaction", "code": 10062}, 404)
        body = await request.json()
        responses = self.interaction_responses.setdefault(interaction_id, [])
        if responses:
            return _json({"message": "Interaction has already been acknowledged.", "code": 40060}, 400)
        responses.append(body)
        data = body.get("data") or {}
        if body["type"] in (4, 5):  # a message, or "thinking..." that the first followup fills in
            loading = 128 if body["type"] == 5 else 0
            stored = Stored(
                next(self._ids),
                self._interaction_channels[interaction_id],
                [data.get("content", "")],
                data.get("components") or [],
                data.get("flags", 0) | loading,
            )
            self.messages[stored.id] = stored
            self._originals[interaction_id] = stored.id
        elif body["type"] == 7 and interaction_id in self._pressed:  # edit the message whose button it was
            self._apply_edit(self.messages[self._pressed[interaction_id]], data)
        # ?with_response=1 (what discord.py asks for): the callback answers with what it created
        out: dict[str, Any] = {
            "interaction": {
                "id": str(interaction_id),
                "type": 2,
                "response_message_loading": body["type"] == 5,
                "response_message_ephemeral": bool(data.get("flags", 0) & 64),
            }
        }
        created = self.messages.get(self._originals.get(interaction_id, -1))
        if created is not None:
            out["interaction"]["response_message_id"] = str(created.id)
            out["resource"] = {"type": body["type"], "message": self._message_payload(created, webhook=True)}
        return _json(out)

    async def _followup(self, request: web.Request) -> web.Response:
        interaction_id = self._interaction_tokens.get(request.match_info["token"])
        if interaction_id is None:
            return _json({"message": "Unknown Webhook", "code": 10015}, 404)
        body = await request.json()
        if len(body.get("content") or "") > 2000:
            return _json({"message": "Invalid Form Body", "code": 50035}, 400)
        original = self.messages.get(self._originals.get(interaction_id, -1))
        if original is not None and original.flags & 128:  # the first followup replaces "thinking..."
            original.flags &= ~128
            original.versions.append(body.get("content", ""))
            original.components = body.get("components") or []
            return _json(self._message_payload(original, webhook=True))
        stored = Stored(
            next(self._ids),
            self._interaction_channels[interaction_id],
            [body.get("content", "")],
            body.get("components") or [],
            body.get("flags", 0),
        )
        self.messages[stored.id] = stored
        return _json(self._message_payload(stored, webhook=True))

    async def _get_webhook_message(self, request: web.Request) -> web.Response:
        stored = self._webhook_message(request)
        if stored is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        return _json(self._message_payload(stored, webhook=True))

    async def _edit_webhook_message(self, request: web.Request) -> web.Response:
        stored = self._webhook_message(request)
        if stored is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        return self._apply_edit(stored, await request.json(), webhook=True)

    # -- payloads ----------------------------------------------------------------------------

    def _webhook_message(self, request: web.Request) -> Stored | None:
        interaction_id = self._interaction_tokens.get(request.match_info["token"])
        if interaction_id is None:
            return None
        message = request.match_info["message"]
        if message == "@original":
            return self.messages.get(self._originals.get(interaction_id, -1))
        return self.messages.get(int(message))

    def _apply_edit(self, stored: Stored, body: dict[str, Any], *, webhook: bool = False) -> web.Response:
        if "content" in body:
            if body["content"] is None or len(body["content"]) > 2000:
                return _json({"message": "Invalid Form Body", "code": 50035}, 400)
            stored.versions.append(body["content"])
        if "components" in body:
            stored.components = body["components"] or []
        return _json(self._message_payload(stored, webhook=webhook))

    def _message(
        self,
        channel_id: int,
        author: dict[str, Any],
        content: str,
        *,
        message_id: int | None = None,
        guild_id: int | None = None,
        mentions: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        data = {
            "id": str(message_id or next(self._ids)),
            "channel_id": str(channel_id),
            "author": author,
            "content": content,
            "timestamp": _iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": mentions or [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            "components": [],
        }
        if guild_id is not None:
            data["guild_id"] = str(guild_id)
        return data

    def _message_payload(self, stored: Stored, *, webhook: bool = False) -> dict[str, Any]:
        data = self._message(stored.channel_id, self.bot_user, stored.content, message_id=stored.id)
        data["components"] = stored.components
        data["flags"] = stored.flags
        if webhook:
            data["webhook_id"] = str(APP_ID)
        return data

    def _interaction(
        self, kind: int, user_id: int, guild_id: int | None, channel_id: int | None
    ) -> dict[str, Any]:
        interaction_id = next(self._ids)
        token = f"itoken{interaction_id}"
        channel = channel_id if channel_id is not None else self.dm_channel(user_id)
        self._interaction_tokens[token] = interaction_id
        self._interaction_channels[interaction_id] = channel
        data: dict[str, Any] = {
            "id": str(interaction_id),
            "application_id": str(APP_ID),
            "type": kind,
            "token": token,
            "version": 1,
            "channel_id": str(channel),
            "locale": "en-US",
            "app_permissions": "0",
            "entitlements": [],
            "attachment_size_limit": 8 << 20,
            "authorizing_integration_owners": {},
        }
        if guild_id is None:
            data["user"] = user(user_id)
            data["channel"] = {"id": str(channel), "type": 1, "recipients": [user(user_id)]}
            data["context"] = 1
        else:
            data["guild_id"] = str(guild_id)
            data["member"] = {
                "user": user(user_id),
                "roles": [],
                "joined_at": _iso(),
                "deaf": False,
                "mute": False,
                "flags": 0,
                "permissions": "0",
            }
            data["channel"] = {
                "id": str(channel),
                "type": 0,
                "guild_id": str(guild_id),
                "name": "general",
                "position": 0,
                "permission_overwrites": [],
                "nsfw": False,
                "parent_id": None,
            }
            data["context"] = 0
        return data


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # exactly application/json: discord.py only parses a body whose content-type is that string
    # (aiohttp's content_type= would append "; charset=utf-8", which discord.py does not parse)
    # "Via": Discord's API answers through Google's front end; discord.py treats a 429 without it as
    # a Cloudflare ban and does not retry
    return web.Response(
        status=status,
        body=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Via": "1.1 google", **(headers or {})},
    )
