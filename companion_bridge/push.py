"""Web Push (RFC 8030, VAPID RFC 8292, aes128gcm RFC 8291) from the bridge to companion web apps.

A push carries only the new request's opaque id (`{"id": "req_…"}`), encrypted to the browser's
subscription key: the push service learns nothing, and neither does a lock screen. The page then
fetches the request over its own authenticated connection and checks the signer's signature, as
for every request. Without push, the app shows pending requests when opened.

The VAPID key is made on first use and kept in `<bridge home>/vapid.pem` (0600); subscriptions in
`<bridge home>/push.json` (0600), at most a few per paired device, dropped when the push service
answers 404/410 or the device is revoked. Endpoints must be https (a push service), so a device
cannot point the bridge at an address on its own network; tests allow loopback http explicitly.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from py_vapid import Vapid02
from pydantic import BaseModel, ConfigDict, Field

from policies.kernel.files import check_private_file, write_private_file

log = logging.getLogger("owlia.bridge.push")
MAX_PER_DEVICE = 4
PUSH_TTL_SECONDS = 300  # a request expires in 5 minutes by default: an older push is useless
B64URL = r"^[A-Za-z0-9_-]+={0,2}$"


class SubscriptionKeys(BaseModel):
    model_config = ConfigDict(extra="forbid")
    p256dh: str = Field(pattern=B64URL, min_length=80, max_length=100)
    auth: str = Field(pattern=B64URL, min_length=16, max_length=32)


class Subscription(BaseModel):
    model_config = ConfigDict(extra="ignore")  # browsers add expirationTime
    endpoint: str = Field(max_length=2048)
    keys: SubscriptionKeys


class SubscribeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    token: str = Field(max_length=2048)
    subscription: Subscription


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def endpoint_allowed(endpoint: str, allow_loopback_http: bool) -> bool:
    url = urlparse(endpoint)
    if url.scheme == "https" and url.hostname:
        return True
    return allow_loopback_http and url.scheme == "http" and url.hostname in ("127.0.0.1", "localhost")


@dataclass
class Pusher:
    home: Path
    subject: str = "mailto:owliabot@localhost"  # VAPID `sub`: how a push service reaches the operator
    allow_loopback_http: bool = False
    timeout: float = 10.0
    sent: int = 0
    failed: int = 0
    _vapid: Any = field(default=None, repr=False)

    @property
    def key_file(self) -> Path:
        return self.home / "vapid.pem"

    @property
    def subs_file(self) -> Path:
        return self.home / "push.json"

    def vapid(self) -> Any:
        if self._vapid is None:
            if self.key_file.exists():
                check_private_file(self.key_file)
                self._vapid = Vapid02.from_pem(self.key_file.read_bytes())
            else:
                vapid = Vapid02()
                vapid.generate_keys()
                write_private_file(self.key_file, vapid.private_pem())
                self._vapid = vapid
        return self._vapid

    def public_key(self) -> str:
        """The applicationServerKey a page subscribes with (uncompressed P-256 point, base64url)."""
        return b64url(self.vapid().public_key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint))

    def subscriptions(self) -> dict[str, list[dict[str, Any]]]:
        if not self.subs_file.exists():
            return {}
        check_private_file(self.subs_file)
        data = json.loads(self.subs_file.read_text())
        return data if isinstance(data, dict) else {}

    def _save(self, subs: dict[str, list[dict[str, Any]]]) -> None:
        write_private_file(self.subs_file, json.dumps(subs).encode())

    def subscribe(self, device_id: str, subscription: Subscription) -> None:
        if not endpoint_allowed(subscription.endpoint, self.allow_loopback_http):
            raise ValueError("a push endpoint must be an https URL of a push service")
        self.vapid()  # the key the subscriber was given (GET /v1/push/key) exists from now on
        subs = self.subscriptions()
        mine = [s for s in subs.get(device_id, []) if s["endpoint"] != subscription.endpoint]
        mine.append(subscription.model_dump(include={"endpoint", "keys"}))
        subs[device_id] = mine[-MAX_PER_DEVICE:]
        self._save(subs)

    def forget_devices(self, active: set[str]) -> None:
        subs = self.subscriptions()
        kept = {d: s for d, s in subs.items() if d in active}
        if kept != subs:
            self._save(kept)

    async def notify(
        self, request_ids: list[str], active: Callable[[str], bool] = lambda device_id: True
    ) -> None:
        """One push per request id to every subscription of an `active` (paired, not revoked)
        device; a subscription the push service says is gone is dropped."""
        from pywebpush import WebPushException, webpush_async  # lazy: 148 ms, 18804 KiB

        subs = self.subscriptions()
        if not subs or not request_ids:
            return
        gone: set[str] = set()
        for request_id in request_ids:
            if not re.fullmatch(r"req_[0-9a-f]{32}", request_id):
                continue
            for device_id, device_subs in subs.items():
                if not active(device_id):
                    continue
                for sub in device_subs:
                    try:
                        await webpush_async(
                            sub,
                            data=json.dumps({"id": request_id}),
                            vapid_private_key=self.vapid(),
                            vapid_claims={"sub": self.subject},
                            ttl=PUSH_TTL_SECONDS,
                            timeout=self.timeout,
                        )
                        self.sent += 1
                    except WebPushException as exc:
                        self.failed += 1
                        status = getattr(exc.response, "status", None) or getattr(
                            exc.response, "status_code", None
                        )
                        if status in (404, 410):
                            gone.add(sub["endpoint"])
                        log.warning("push refused by the push service (HTTP %s)", status)
                    except (OSError, asyncio.TimeoutError) as exc:
                        self.failed += 1
                        log.warning("push service unreachable: %s", type(exc).__name__)
        if gone:
            subs = self.subscriptions()
            self._save({d: [s for s in ss if s["endpoint"] not in gone] for d, ss in subs.items()})
