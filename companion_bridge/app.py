"""The bridge's HTTP and WebSocket surface (FastAPI): pairing, device login, request delivery.

The bridge is untrusted transport by design. It can delay or drop requests, but every answer it
forwards is checked by the signer (device signature over the exact request, single use, expiry,
the signed transaction field by field), so a compromised bridge cannot forge an approval. What the
bridge does check (device login, token, scope) only keeps strangers from reading the queue.

WebSocket messages (JSON):
  companion -> bridge  {"type": "hello", "token": T}
                       {"type": "call", "id": N, "method": M, "params": {...}}   M in CALLABLE
  bridge -> companion  {"type": "welcome", "device_id": D, "state": {...}}
                       {"type": "requests", "requests": [...]}    (the backlog, in batches, first)
                       {"type": "request", "request": {...}}      (then each new one, live)
                       {"type": "reply", "id": N, "ok": bool, "result"|"error": ...}
                       {"type": "state", "state": {...}}           (freeze changes)
                       {"type": "resolved", "request_id": R}
                       {"type": "devices", "devices_rev": V}       (a pairing or revocation: GET /v1/devices)

HTTP `GET /v1/devices` with `Authorization: Bearer T` (the same connection token): the paired devices
as companion_bridge/device_list.py shows them; 401 without a valid token of an active device.

Abuse limits (companion_bridge/limits.py): an HTTP refusal is 429 with Retry-After; a socket over
its connect or message rate is closed with 4429 ("... retry after N s"), one over the size cap with
1009; an answer over the device's rate gets an error reply with `retry_after` and can be sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response, WebSocket, WebSocketDisconnect
from fastapi.responses import RedirectResponse
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat

from companion_bridge import webapp
from companion_bridge.challenges import NONCE_PATTERN, Challenges
from companion_bridge.device_list import DeviceList, device_list
from companion_bridge.limits import BridgeLimits, Guard, retry_seconds
from companion_bridge.push import Pusher, SubscribeRequest
from companion_bridge.queue import DeliveryQueue
from companion_bridge.ratelimit import Verdict
from companion_bridge.signer_link import PublicState, SignerLink
from companion_bridge.tokens import TokenIssuer
from companion_bridge.wire import auth_message
from policies.kernel import safejson
from signer.wire.exchange import SignerError, SignerUnavailable
from signer.wire.messages import MAX_CLOCK_SKEW

log = logging.getLogger("owlia.bridge")
CALLABLE = frozenset(
    {
        "approvals.answer",
        "approvals.freeze",
        "approvals.topup",
        "approvals.state",
        "approvals.home",
        "approvals.revoke_device",
        "tier3.offer",
        "tier3.grant_answer",
        "policy.view",
        "policy.edit",
    }
)
HELLO_TIMEOUT = 10.0
BACKLOG_BATCH = 50  # requests per frame when a companion (re)connects
BACKLOG_CACHE_SECONDS = 1.0  # a burst of reconnecting companions shares one set of frames
CLOSE_UNAUTHORIZED = 4401
CLOSE_RATE_LIMITED = 4429
CLOSE_TOO_BIG = 1009
RATE_LIMITED = -32029  # error code of a call refused for rate: send it again after `retry_after`
PAIRING_ID = re.compile(r"^pair_[0-9a-f]{16}$")


class ChallengeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    device_id: str = Field(pattern=r"^dev_[0-9a-f]{16}$")


class TokenRequest(ChallengeRequest):
    nonce: str = Field(pattern=NONCE_PATTERN)
    ts: FiniteFloat
    signature: str = Field(pattern=r"^[0-9a-f]{128}$")


class ChallengeReply(BaseModel):
    nonce: str
    aud: str
    expires_in: int | float  # seconds, as configured


class TokenReply(BaseModel):
    token: str
    exp: int | float  # when it expires (the bridge's clock)
    aud: str


class HealthReply(BaseModel):
    ok: bool
    connections: int
    queued: int
    refused: dict[str, int]  # what was refused, by kind, since start


class PushKeyReply(BaseModel):
    public_key: str


class Done(BaseModel):
    ok: bool


def too_many(what: str, verdict: Verdict) -> HTTPException:
    seconds = retry_seconds(verdict)
    return HTTPException(
        429, f"too many {what}; retry after {seconds} s", headers={"Retry-After": str(seconds)}
    )


def peer_of(conn: Request | WebSocket, guard: Guard) -> str:
    """Every X-Forwarded-For line, in order: a proxy that adds its own line after the client's
    forged one must still have the last word."""
    forwarded = ", ".join(conn.headers.getlist("x-forwarded-for")) or None
    return guard.peer(conn.client.host if conn.client else None, forwarded)


@dataclass
class Hub:
    """Live companion connections by device id."""

    sockets: dict[str, set[WebSocket]] = field(default_factory=dict)

    def add(self, device_id: str, ws: WebSocket) -> None:
        self.sockets.setdefault(device_id, set()).add(ws)

    def remove(self, device_id: str, ws: WebSocket) -> None:
        self.sockets.get(device_id, set()).discard(ws)

    def count(self) -> int:
        return sum(len(s) for s in self.sockets.values())

    async def send_all(self, message: dict[str, Any]) -> None:
        text = json.dumps(message)
        for conns in list(self.sockets.values()):
            for ws in list(conns):
                with contextlib.suppress(Exception):
                    await ws.send_text(text)

    async def drop(self, device_id: str) -> None:
        for ws in list(self.sockets.pop(device_id, set())):
            with contextlib.suppress(Exception):
                await ws.close(CLOSE_UNAUTHORIZED, "device revoked")


class Bridge:
    def __init__(
        self,
        link: SignerLink,
        queue: DeliveryQueue,
        tokens: TokenIssuer,
        guard: Guard | None = None,
        pusher: Pusher | None = None,
    ) -> None:
        self.link = link
        self.pusher = pusher
        self._pushes: set[asyncio.Task] = set()
        self.queue = queue
        self.tokens = tokens
        self.guard = guard or Guard(BridgeLimits())
        self.hub = Hub()
        self.challenges = Challenges()
        self._last_state: PublicState | None = None
        self._announced_rev: str | None = None
        self._frames: tuple[float, list[str]] | None = None

    async def deliver(self, requests: list[dict[str, Any]], state: PublicState) -> None:
        for device_id in [d for d in self.hub.sockets if not self.link.device_active(d)]:
            await self.hub.drop(device_id)
        fresh = self.queue.put(requests)
        if fresh:
            self._frames = None
        self.queue.prune()
        for request in fresh:
            await self.hub.send_all({"type": "request", "request": request})
        if fresh and self.pusher is not None:  # in the background: a slow push service never delays delivery
            task = asyncio.create_task(
                self.pusher.notify([r["request_id"] for r in fresh], self.link.device_active)
            )
            self._pushes.add(task)
            task.add_done_callback(self._pushes.discard)
        if state != self._last_state:
            self._last_state = state
            await self.hub.send_all({"type": "state", "state": state})
        await self.announce_devices()

    async def announce_devices(self) -> None:
        """Tell every open page that a device was paired or revoked, so it fetches the list again."""
        rev = self.link.devices_rev
        if rev != self._announced_rev:
            self._announced_rev = rev
            await self.hub.send_all({"type": "devices", "devices_rev": rev})

    def backlog_frames(self) -> list[str]:
        """The backlog as ready-made frames, built once and shared by every connection: 100
        companions reconnecting at once cost one SQLite read, not 100 parse-and-dump passes."""
        now = time.monotonic()
        if self._frames is None or now - self._frames[0] > BACKLOG_CACHE_SECONDS:
            texts = self.queue.backlog_json()
            self._frames = (
                now,
                [
                    '{"type": "requests", "requests": [' + ", ".join(texts[i : i + BACKLOG_BATCH]) + "]}"
                    for i in range(0, len(texts), BACKLOG_BATCH)
                ],
            )
        return self._frames[1]

    # ---- pairing and device login -----------------------------------------------------------

    async def pair(self, body: dict[str, Any], peer: str) -> dict[str, Any]:
        """Forward a pairing proof to the signer, which decides. The bridge only rations attempts:
        per peer (a refused one costs more) and per pairing id, burnt after repeated refusals."""
        guard = self.guard
        verdict = guard.check("pair", guard.pair_peers, peer)
        if not verdict.allowed:
            raise too_many("pairing attempts", verdict)
        pairing_id = body.get("pairing_id")
        if not isinstance(pairing_id, str) or not PAIRING_ID.fullmatch(pairing_id):
            guard.pairing_failed(None, peer)
            raise HTTPException(400, "malformed pairing id")
        if guard.pairing_burnt(pairing_id):
            guard.refuse("pair_burnt", pairing_id)
            raise HTTPException(
                403, "this pairing code was refused too often: show a new one with `owlia companion pair`"
            )
        try:
            result = await self.link.call("companion.pair_complete", body)
        except SignerUnavailable as exc:
            raise HTTPException(503, exc.message) from None
        except SignerError as exc:
            guard.pairing_failed(pairing_id, peer)
            raise HTTPException(403 if exc.code == -32002 else 400, exc.message) from None
        await self.link.refresh()
        await self.announce_devices()
        return result

    def challenge(self, device_id: str, peer: str) -> ChallengeReply:
        verdict = self.guard.check("auth", self.guard.auth_peers, peer)
        if not verdict.allowed:
            raise too_many("login attempts", verdict)
        return ChallengeReply(
            nonce=self.challenges.issue(device_id), aud=self.tokens.audience, expires_in=self.challenges.ttl
        )

    def token(self, req: TokenRequest, peer: str) -> TokenReply:
        """A failed login is charged to the peer; a good one to the device, which proved itself."""
        verdict = self.guard.check("auth", self.guard.auth_peers, peer)
        if not verdict.allowed:
            raise too_many("login attempts", verdict)
        try:
            self._check_login(req)
        except HTTPException:
            self.guard.login_failed(peer)
            raise
        verdict = self.guard.check("token", self.guard.tokens, req.device_id)
        if not verdict.allowed:
            raise too_many("logins for this device", verdict)
        token, exp = self.tokens.issue(req.device_id)
        return TokenReply(token=token, exp=exp, aud=self.tokens.audience)

    def _check_login(self, req: TokenRequest) -> None:
        if not self.challenges.usable(req.device_id, req.nonce):
            raise HTTPException(401, "unknown, used or expired challenge")
        if abs(time.time() - req.ts) > MAX_CLOCK_SKEW:
            raise HTTPException(401, "stale timestamp")
        device = self.link.devices.get(req.device_id)
        if device is None or not device.active:
            raise HTTPException(401, "unknown or revoked device")
        try:
            VerifyKey(bytes.fromhex(device.public_key)).verify(
                auth_message(req.device_id, self.tokens.audience, req.nonce, req.ts),
                bytes.fromhex(req.signature),
            )
        except (BadSignatureError, ValueError):
            raise HTTPException(401, "bad device signature") from None
        self.challenges.use(req.nonce)

    def authorized(self, token: str, peer: str) -> str:
        """The device id behind a connection token of an active device, or 401 (charged to the peer)."""
        verdict = self.guard.check("auth", self.guard.auth_peers, peer)
        if not verdict.allowed:
            raise too_many("login attempts", verdict)
        claims = self.tokens.verify(token)
        if claims is None or not self.link.device_active(claims.device_id):
            self.guard.login_failed(peer)
            raise HTTPException(
                401, "invalid, expired or revoked token: log in again", headers={"WWW-Authenticate": "Bearer"}
            )
        return claims.device_id

    async def devices(self, token: str, peer: str) -> DeviceList:
        """Read from the signer on every call, so `last_seen` is current and a revocation the poll
        has not brought yet still shuts the revoked device out."""
        device_id = self.authorized(token, peer)
        try:
            reply = await self.link.call("companion.devices")
        except SignerUnavailable as exc:
            raise HTTPException(503, exc.message) from None
        except SignerError as exc:
            raise HTTPException(502, exc.message) from None
        listed = device_list(reply, device_id)
        if not any(d.this_device and d.revoked_at is None for d in listed.devices):
            self.guard.login_failed(peer)
            raise HTTPException(
                401, "invalid, expired or revoked token: log in again", headers={"WWW-Authenticate": "Bearer"}
            )
        return listed

    # ---- a companion session ----------------------------------------------------------------

    async def session(self, ws: WebSocket) -> None:
        guard, peer = self.guard, peer_of(ws, self.guard)
        await ws.accept()
        verdict = guard.check("auth", guard.auth_peers, peer)
        if not verdict.allowed:
            await self._close_rate_limited(ws, "connections", verdict)
            return
        try:
            hello = safejson.loads(await asyncio.wait_for(ws.receive_text(), HELLO_TIMEOUT))
            claims = self.tokens.verify(str(hello.get("token", ""))) if isinstance(hello, dict) else None
        except WebSocketDisconnect as exc:
            if exc.code == CLOSE_TOO_BIG:
                guard.refuse("message_size", peer)
            return
        except (asyncio.TimeoutError, ValueError):
            claims = None
        if claims is None or not self.link.device_active(claims.device_id):
            guard.login_failed(peer)
            await ws.close(CLOSE_UNAUTHORIZED, "invalid, expired or revoked token")
            return
        device_id = claims.device_id
        verdict = guard.check("connect", guard.connects, device_id)
        if not verdict.allowed:
            await self._close_rate_limited(ws, "connections for this device", verdict)
            return
        bucket = guard.socket_bucket()
        self.hub.add(device_id, ws)
        # Short-lived means short-lived: the connection ends with its token (the companion logs in again).
        expiry = asyncio.get_running_loop().call_later(
            max(0.0, claims.exp - time.time()),
            lambda: asyncio.ensure_future(ws.close(CLOSE_UNAUTHORIZED, "token expired")),
        )
        try:
            await ws.send_text(
                json.dumps(
                    {
                        "type": "welcome",
                        "device_id": device_id,
                        "state": self.link.state or {},  # {}: not read from the signer yet
                        "devices_rev": self.link.devices_rev,
                    }
                )
            )
            for frame in self.backlog_frames():
                await ws.send_text(frame)
            while True:
                text = await ws.receive_text()
                verdict = bucket.take()
                if not verdict.allowed:
                    guard.refuse("message_rate", device_id, verdict)
                    await self._close_rate_limited(ws, "messages", verdict)
                    return
                message = safejson.loads(text)
                if time.time() >= claims.exp or not self.link.device_active(device_id):
                    await ws.close(CLOSE_UNAUTHORIZED, "token expired or device revoked")
                    return
                if isinstance(message, dict) and message.get("type") == "call":
                    await ws.send_text(json.dumps(await self._call(device_id, message)))
        except WebSocketDisconnect as exc:
            if exc.code == CLOSE_TOO_BIG:
                guard.refuse("message_size", device_id)
        except (ValueError, RuntimeError):
            pass
        finally:
            expiry.cancel()
            self.hub.remove(device_id, ws)

    @staticmethod
    async def _close_rate_limited(ws: WebSocket, what: str, verdict: Verdict) -> None:
        with contextlib.suppress(Exception):
            await ws.close(CLOSE_RATE_LIMITED, f"too many {what}; retry after {retry_seconds(verdict)} s")

    async def _call(self, device_id: str, message: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = {"type": "reply", "id": message.get("id")}
        method, params = message.get("method"), message.get("params")
        if method not in CALLABLE or not isinstance(params if params is not None else {}, dict):
            return {
                **reply,
                "ok": False,
                "error": {"code": -32601, "message": "not callable through the bridge"},
            }
        if params is not None and params.get("device_id", device_id) != device_id:
            return {
                **reply,
                "ok": False,
                "error": {"code": -32002, "message": "a device answers only for itself"},
            }
        if method == "approvals.answer":
            verdict = self.guard.check("answer", self.guard.answers, device_id)
            if not verdict.allowed:  # nothing consumed: the same answer works after the wait
                seconds = retry_seconds(verdict)
                error = {
                    "code": RATE_LIMITED,
                    "message": f"too many answers; retry after {seconds} s",
                    "retry_after": seconds,
                }
                return {**reply, "ok": False, "error": error}
        try:
            result = await self.link.call(method, params)
        except SignerUnavailable as exc:
            return {**reply, "ok": False, "error": {"code": exc.code, "message": exc.message}}
        except SignerError as exc:
            return {**reply, "ok": False, "error": {"code": exc.code, "message": exc.message}}
        if method == "approvals.answer" and params is not None:
            self.queue.mark_answered(params["request_id"])
            self._frames = None
            await self.hub.send_all({"type": "resolved", "request_id": params["request_id"]})
        return {**reply, "ok": True, "result": result}


def create_app(bridge: Bridge) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await bridge.link.refresh()
        pump = asyncio.create_task(bridge.link.pump(bridge.queue.cursor, bridge.deliver))
        try:
            yield
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            await bridge.link.close()

    app = FastAPI(
        title="OwliaBot companion bridge", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )

    @app.get("/v1/health")
    async def health() -> HealthReply:
        return HealthReply(
            ok=True,
            connections=bridge.hub.count(),
            queued=bridge.queue.count(),
            refused=dict(bridge.guard.refused),
        )

    @app.post("/v1/pair")
    async def pair(body: dict[str, Any], request: Request) -> dict[str, Any]:
        return await bridge.pair(body, peer_of(request, bridge.guard))

    @app.post("/v1/auth/challenge")
    async def challenge(req: ChallengeRequest, request: Request) -> ChallengeReply:
        return bridge.challenge(req.device_id, peer_of(request, bridge.guard))

    @app.post("/v1/auth/token")
    async def token(req: TokenRequest, request: Request) -> TokenReply:
        return bridge.token(req, peer_of(request, bridge.guard))

    @app.websocket("/v1/ws")
    async def ws(websocket: WebSocket) -> None:
        await bridge.session(websocket)

    @app.get("/v1/push/key")
    async def push_key() -> PushKeyReply:
        if bridge.pusher is None:
            raise HTTPException(404, "push is not enabled on this bridge")
        return PushKeyReply(public_key=bridge.pusher.public_key())

    @app.post("/v1/push/subscribe")
    async def push_subscribe(req: SubscribeRequest, request: Request) -> Done:
        """A paired device (its connection token) registers where to be woken up."""
        device_id = bridge.authorized(req.token, peer_of(request, bridge.guard))
        if bridge.pusher is None:
            raise HTTPException(404, "push is not enabled on this bridge")
        try:
            bridge.pusher.subscribe(device_id, req.subscription)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        return Done(ok=True)

    @app.get("/v1/devices")
    async def devices(request: Request, response: Response) -> DeviceList:
        """The paired devices, for a device holding a connection token (Authorization: Bearer)."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        listed = await bridge.devices(
            token.strip() if scheme.lower() == "bearer" else "", peer_of(request, bridge.guard)
        )
        response.headers["Cache-Control"] = "no-store"
        return listed

    @app.get("/app")
    async def app_root() -> RedirectResponse:
        return RedirectResponse("/app/", status_code=308, headers=webapp.HEADERS)

    @app.get("/app/")
    async def app_index() -> Response:
        return await app_file("")

    @app.get("/app/{name}")
    async def app_file(name: str) -> Response:
        found = webapp.load(name)
        if found is None:
            raise HTTPException(404, "not found")
        body, media_type = found
        headers = dict(webapp.HEADERS)
        if name == "sw.js":
            headers["Service-Worker-Allowed"] = "/app/"
        return Response(body, media_type=media_type, headers=headers)

    return app
