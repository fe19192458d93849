"""The kill switch: a paired companion freezes the signer, and only the companion lifts it.

Freezing takes signing power away in memory first (no Tier 2 signature from that instant), then
durably: the frozen flag, a fresh freeze id and every session key revoked, in one commit. Only a
device-signed unfreeze that names the current freeze id lifts it. A freeze and an unfreeze that
arrive together cannot cancel each other out: the unfreeze is written only if the freeze it names
is still the current one when its transaction runs, and it lifts the in-memory freeze only if no
freeze began while it was being written.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from signer.store import approvals as freeze_store
from signer.store.requests import Connection
from signer.tier1.devices import DeviceRegistry, Evidence
from signer.tier2.session_keys import REVOKED
from signer.wire.messages import FREEZE_DOMAIN, freeze_body, signed_message
from signer.wire.protocol import FreezeAction, RpcError
from signer.wire.requests import FreezeParams

if TYPE_CHECKING:
    from signer.tier1.port import SigningCore


class KillSwitch:
    def __init__(
        self, engine: SigningCore, devices: DeviceRegistry, clock: Callable[[], float] = time.time
    ) -> None:
        self.engine = engine
        self.devices = devices
        self.clock = clock
        self._freezes_begun = 0

    def current_id(self) -> str:
        return freeze_store.freeze_id(self.engine.reader)

    def disarm_all(self) -> None:
        """In memory first, the safe direction: no Tier 2 signature from this instant on."""
        self.engine.frozen = True
        self._freezes_begun += 1
        for key_id in self.engine.keys.active_ids():
            self.engine.keys.disarm(key_id, REVOKED)

    def persist(self, conn: Connection, device_id: str) -> None:
        """The durable half of a freeze, inside the caller's transaction (after `disarm_all`)."""
        freeze_id = "frz_" + secrets.token_hex(8)
        revoked = [i.key_id for i in self.engine.keys.infos() if i.status == REVOKED]
        freeze_store.freeze(conn, freeze_id, revoked, self.clock(), REVOKED)
        self.engine.audit.append(
            "signer.frozen", {"by_device": device_id, "freeze_id": freeze_id, "session_keys_revoked": revoked}
        )

    async def freeze_on_host(self, client_name: str) -> None:
        """The admin token's freeze, for when the companion cannot reach the signer (a lost phone, a
        down bridge). Freezing only takes authority away, so the host may; lifting it still needs a
        paired device's signed unfreeze."""
        self.disarm_all()
        await self.engine.writer.run(lambda conn: self.persist(conn, f"host:{client_name}"))

    async def toggle(self, params: FreezeParams) -> None:
        """Freeze or unfreeze on a paired device's signed, single-use word; the caller announces it."""
        message = signed_message(
            FREEZE_DOMAIN, freeze_body(params.device_id, params.action, params.freeze_id, params.ts)
        )
        evidence: Evidence = {"device_id": params.device_id, "action": params.action}
        await self.devices.authorize(
            params.device_id, params.action, message, params.signature, "freeze.refused", evidence
        )
        await self.devices.consume_proof(message, params.ts, "freeze.refused", evidence)
        if params.action is FreezeAction.FREEZE:
            self.disarm_all()
            await self.engine.writer.run(lambda conn: self.persist(conn, params.device_id))
            return
        current, freezes_seen = self.current_id(), self._freezes_begun
        if not self.engine.frozen or params.freeze_id != current:
            raise await self._unfreeze_refused(evidence)

        def thaw(conn: Connection) -> bool:
            if not freeze_store.thaw(conn, current):  # a newer freeze committed since the check
                return False
            self.engine.audit.append("signer.unfrozen", {"by_device": params.device_id, "freeze_id": current})
            return True

        if not await self.engine.writer.run(thaw):
            raise await self._unfreeze_refused(evidence)
        if self._freezes_begun == freezes_seen:  # else a freeze is on its way to disk: it stays frozen
            self.engine.frozen = False

    async def _unfreeze_refused(self, evidence: Evidence) -> RpcError:
        return await self.devices.refuse(
            "freeze.refused", evidence, "not frozen, or the unfreeze names another freeze"
        )
