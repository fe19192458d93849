"""The bridge's side of the signer socket: a `bridge`-scoped client, long-polling for requests.

Two connections: one parked in `approvals.wait` (so a new request is pushed within milliseconds),
one for everything else (answers, pairing, device list), so an answer never waits behind the poll.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict

from signer.wire.client import R, SignerClient
from signer.wire.exchange import SignerError, SignerUnavailable
from signer.wire.replies import ApprovalsStateReply, ApprovalsWaitReply, DeviceJson, DevicesReply, SignerState

log = logging.getLogger("owlia.bridge")
RETRY_SECONDS = 0.5


class PublicState(TypedDict):
    """What every open page is told of the signer's state (JSON, as the web app reads it)."""

    frozen: bool
    freeze_id: str | None
    main_account: str | None


# the open requests as the signer sent them (the companion hashes each one's JSON itself), and the state
Deliver = Callable[[list[dict[str, Any]], PublicState], Awaitable[None]]


class SignerLink:
    def __init__(self, socket_path: Path, token: str, *, poll_timeout: float = 20.0) -> None:
        self._poll = SignerClient(socket_path, token, timeout=poll_timeout + 15)
        self._rpc = SignerClient(socket_path, token, timeout=30)
        self.poll_timeout = poll_timeout
        self.devices: dict[str, DeviceJson] = {}
        self.state: PublicState | None = None  # None until the first read
        self.devices_rev = ""

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A reply relayed to a companion: the signer's JSON as sent, checked against its model first.
        One retry on a fresh connection after the signer restarted. Retrying is safe: every
        mutation is single use on the signer's side (a duplicate answer is refused as a replay)."""
        try:
            return await self._rpc.call_json(method, params)
        except SignerUnavailable:
            return await self._rpc.call_json(method, params)

    async def _read(self, model: type[R], method: str) -> R:
        """A reply the bridge reads itself, typed; the same one retry as `call`."""
        try:
            return await self._rpc.call_as(model, method)
        except SignerUnavailable:
            return await self._rpc.call_as(model, method)

    async def refresh(self) -> None:
        """Re-read the paired devices (public keys, revocations) and the freeze state."""
        reply = await self._read(DevicesReply, "companion.devices")
        self.devices = {d.device_id: d for d in reply.devices}
        self.devices_rev = reply.devices_rev or ""
        self.state = _public_state(await self._read(ApprovalsStateReply, "approvals.state"))

    def device_active(self, device_id: str) -> bool:
        device = self.devices.get(device_id)
        return device is not None and device.active

    async def pump(self, cursor: int, deliver: Deliver) -> None:
        """Forever: wait for requests after `cursor`, hand them (and state changes) to `deliver`."""
        while True:
            try:
                reply = await self._poll.call_as(
                    ApprovalsWaitReply, "approvals.wait", {"after": cursor, "timeout": self.poll_timeout}
                )
                if reply.devices_rev != self.devices_rev:
                    await self.refresh()
            except (SignerUnavailable, SignerError) as exc:
                log.warning("signer poll failed: %s; retrying", exc.message)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            self.state = state = _public_state(reply)
            cursor = reply.cursor
            # relayed as the signer sent them: the companion hashes each request's JSON itself
            await deliver([r.model_dump(mode="json") for r in reply.requests], state)

    async def close(self) -> None:
        await self._poll.close()
        await self._rpc.close()


def _public_state(state: SignerState) -> PublicState:
    return {"frozen": state.frozen, "freeze_id": state.freeze_id, "main_account": state.main_account}
