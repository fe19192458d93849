"""Paired companion devices: the signer's own registry of Ed25519 keys that may answer approvals.

The bridge carries pairing messages but decides nothing: a device exists only once the signer has
checked both proofs itself: knowledge of the one-time code the user read off `owlia companion
pair` (an HMAC over the pairing message, so the code never crosses the bridge) and possession of
the device key (an Ed25519 signature over the same message). Ed25519 is verified with
`cryptography` so the signer's import closure stays free of PyNaCl.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from signer.store import devices as device_store
from signer.store.audit import AuditLog
from signer.store.db import Connection, IntegrityError, get_meta, set_meta
from signer.store.devices import DeviceRow
from signer.store.writer import Writer
from signer.tier1.refusals import RefusalBudget
from signer.wire.messages import (
    PAIR_DOMAIN,
    REVOKE_DOMAIN,
    key_fingerprint,
    pair_body,
    proof_is_fresh,
    revoke_body,
    signed_message,
    verify_ed25519,
)
from signer.wire.protocol import ErrorCode, RpcError
from signer.wire.replies import DeviceJson, DeviceReply, PairBeginReply, PairCompleteReply
from signer.wire.requests import PairCompleteParams

CAPABILITIES = ("approve", "deny", "freeze", "unfreeze", "topup")
MAX_WRONG_CODES = 5  # wrong pairing codes before the pairing is spent


class Evidence(TypedDict, total=False):
    """What a refused answer or proof goes on record with (the reason is added by `refuse`)."""

    request_id: str
    device_id: str
    action: str
    key_id: str
    tx_hash: str


@dataclass(frozen=True, slots=True)
class Device:
    device_id: str
    name: str
    public_key: str
    main_address: str
    capabilities: tuple[str, ...]
    created_at: float
    last_seen: float | None
    revoked_at: float | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_reply(self) -> DeviceJson:
        return DeviceJson(
            device_id=self.device_id,
            name=self.name,
            public_key=self.public_key,
            main_address=self.main_address,
            capabilities=tuple(self.capabilities),
            created_at=self.created_at,
            last_seen=self.last_seen,
            revoked_at=self.revoked_at,
            active=self.active,
        )


def _device(row: DeviceRow) -> Device:
    return Device(row[0], row[1], row[2], row[3], tuple(json.loads(row[4])), row[5], row[6], row[7])


class DeviceRegistry:
    """Reads go to the reader connection (so a revocation bites on the very next check); writes to the writer."""

    def __init__(
        self,
        reader: Connection,
        writer: Writer,
        audit: AuditLog,
        clock: Callable[[], float] = time.time,
        *,
        signer_key: str = "",
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.reader = reader
        self.signer_key = signer_key  # the signer's identity (public), handed out in pairing links
        self.writer = writer
        self.audit = audit
        self.clock = clock  # the signer's clock: every decision and record
        self.wall = wall  # the system clock: only for the bounds of a proof's time (`proof_is_fresh`)
        self._boot = secrets.token_hex(4)
        self._changes = 0  # bumped on every pairing or revocation; the bridge refreshes on change
        self._wrong_codes: dict[str, int] = {}  # per open pairing; bounded by the pairings an admin began
        self._refusals = RefusalBudget()

    @property
    def revision(self) -> str:
        """Changes with every pairing or revocation, and with every signer restart."""
        return f"{self._boot}:{self._changes}"

    # ---- queries ----------------------------------------------------------------------------

    def get(self, device_id: str) -> Device | None:
        row = device_store.device(self.reader, device_id)
        return _device(row) if row else None

    def all(self) -> list[Device]:
        return [_device(r) for r in device_store.all_devices(self.reader)]

    def main_account(self) -> str | None:
        return get_meta(self.reader, "main_account")

    # ---- refusals are audited, then raised --------------------------------------------------

    async def refuse(self, kind: str, body: Mapping[str, object], message: str) -> RpcError:
        """Audited within a budget per kind (signer.tier1.refusals): a flood of forgeries cannot fill the disk."""
        unrecorded = self._refusals.admit(kind, self.clock())
        if unrecorded is not None:
            record = {
                **body,
                "reason": message,
                **({"refusals_not_recorded": unrecorded} if unrecorded else {}),
            }
            await self.writer.run(lambda conn: self.audit.append(kind, record))
        return RpcError(ErrorCode.FORBIDDEN, message)

    async def authorize(
        self,
        device_id: str,
        capability: str,
        message: bytes,
        signature: str,
        audit_kind: str,
        evidence: Mapping[str, object],
    ) -> Device:
        """The device exists, is not revoked, may do this, and signed exactly `message`."""
        device = self.get(device_id)
        problem = None
        if device is None:
            problem = "unknown device"
        elif not device.active:
            problem = "the device was revoked"
        elif capability not in device.capabilities:
            problem = f"the device may not {capability}"
        elif not verify_ed25519(device.public_key, message, signature):
            problem = "the device signature does not verify"
        if problem is not None:
            raise await self.refuse(audit_kind, {**evidence, "device_id": device_id}, problem)
        assert device is not None
        await self.touch(device_id)
        return device

    async def consume_proof(
        self, message: bytes, ts: float, audit_kind: str, evidence: Mapping[str, object]
    ) -> None:
        """A timestamped proof is fresh and used at most once (its digest is remembered until it is stale)."""
        now = self.clock()
        if not proof_is_fresh(ts, now, self.wall()):
            raise await self.refuse(audit_kind, evidence, "the proof is stale or from the future")
        digest = hashlib.sha256(message).hexdigest()
        try:
            await self.writer.run(lambda conn: device_store.remember_proof(conn, digest, ts))
        except IntegrityError:
            raise await self.refuse(audit_kind, evidence, "this proof was already used (replay)") from None

    # ---- pairing ----------------------------------------------------------------------------

    async def begin_pairing(self, name: str, ttl_seconds: int) -> PairBeginReply:
        """A one-time code (100 bits, base32) the user carries to the companion by eye or QR."""
        now = self.clock()
        pairing_id = "pair_" + secrets.token_hex(8)
        code = base64.b32encode(secrets.token_bytes(15)).decode().rstrip("=")
        digest = hashlib.sha256(code.encode()).hexdigest()

        def record(conn: Connection) -> None:
            device_store.insert_pairing(conn, pairing_id, digest, name, now, now + ttl_seconds)
            self.audit.append(
                "companion.pairing_started",
                {"pairing_id": pairing_id, "name": name, "expires_at": now + ttl_seconds},
            )

        await self.writer.run(record)
        grouped = "-".join(code[i : i + 4] for i in range(0, len(code), 4))
        return PairBeginReply(
            pairing_id=pairing_id, code=grouped, expires_at=now + ttl_seconds, signer_key=self.signer_key
        )

    async def _wrong_code(self, pairing_id: str, evidence: Mapping[str, object], now: float) -> RpcError:
        """Counted here, not only at the bridge: a compromised bridge could otherwise guess forever.
        After MAX_WRONG_CODES the code is spent, durably; the user shows a new one."""
        wrong = self._wrong_codes[pairing_id] = self._wrong_codes.get(pairing_id, 0) + 1
        if wrong < MAX_WRONG_CODES:
            return await self.refuse("companion.pair_refused", evidence, "wrong pairing code")
        self._wrong_codes.pop(pairing_id, None)
        await self.writer.run(lambda conn: device_store.spend_pairing(conn, pairing_id, now))
        return await self.refuse(
            "companion.pair_refused",
            evidence,
            f"wrong pairing code {wrong} times: this code is spent, show a new one",
        )

    async def complete_pairing(self, params: PairCompleteParams) -> PairCompleteReply:
        now = self.clock()
        message = signed_message(
            PAIR_DOMAIN,
            pair_body(
                params.pairing_id,
                params.device_pub,
                params.name,
                params.main_address,
                params.ts,
                params.nonce,
            ),
        )
        evidence = {
            "pairing_id": params.pairing_id,
            "name": params.name,
            "device_key_hash": key_fingerprint(params.device_pub),
        }
        row = device_store.pairing(self.reader, params.pairing_id)
        if row is None or row[2] is not None or now >= row[1]:
            raise await self.refuse(
                "companion.pair_refused", evidence, "unknown, used or expired pairing code"
            )
        if not proof_is_fresh(params.ts, now, self.wall()):
            raise await self.refuse("companion.pair_refused", evidence, "the pairing proof is stale")
        # The MAC key is sha256(code): the signer stores only that, and only the code yields it.
        expected = hmac.new(row[0].encode(), message, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, params.mac):
            raise await self._wrong_code(params.pairing_id, evidence, now)
        if not verify_ed25519(params.device_pub, message, params.signature):
            raise await self.refuse(
                "companion.pair_refused", evidence, "the device key signature does not verify"
            )
        main = self.main_account()
        if main is not None and main != params.main_address:
            raise await self.refuse(
                "companion.pair_refused",
                evidence,
                f"this signer's main account is {main}; the companion holds another",
            )
        device = Device(
            "dev_" + secrets.token_hex(8),
            params.name,
            params.device_pub,
            params.main_address,
            CAPABILITIES,
            now,
            now,
            None,
        )

        def record(conn: Connection) -> None:
            if not device_store.spend_pairing(conn, params.pairing_id, now, device.device_id):
                raise IntegrityError("pairing already used")
            device_store.insert_device(
                conn,
                (
                    device.device_id,
                    device.name,
                    device.public_key,
                    device.main_address,
                    json.dumps(list(device.capabilities)),
                    now,
                    now,
                    None,
                ),
            )
            if main is None:
                set_meta(conn, "main_account", params.main_address)
            self.audit.append(
                "companion.paired",
                device.to_reply().model_dump(mode="json", exclude={"public_key"})
                | {"device_key_hash": key_fingerprint(device.public_key)},
            )

        try:
            await self.writer.run(record)
        except IntegrityError:
            raise await self.refuse(
                "companion.pair_refused",
                evidence,
                "the pairing code was already used or the device key is already paired",
            ) from None
        self._changes += 1
        return PairCompleteReply(device=device.to_reply(), main_account=params.main_address)

    async def revoke(self, device_id: str, by: str) -> DeviceReply:
        device = self.get(device_id)
        if device is None:
            raise RpcError(ErrorCode.NOT_FOUND, f"no device {device_id}")
        now = self.clock()

        def record(conn: Connection) -> None:
            device_store.revoke_device(conn, device_id, now)
            self.audit.append("companion.revoked", {"device_id": device_id, "by": by})

        if device.active:
            await self.writer.run(record)
            self._changes += 1
        return DeviceReply(device=self.get(device_id).to_reply())  # type: ignore[union-attr]

    async def revoke_signed(
        self, device_id: str, target_device_id: str, ts: float, signature: str
    ) -> DeviceReply:
        """A paired device revokes a device (another, or itself) on its signed, single-use word. It
        only takes authority away, as a freeze does: a device that may freeze may revoke."""
        message = signed_message(REVOKE_DOMAIN, revoke_body(device_id, target_device_id, ts))
        evidence = {"device_id": device_id, "target_device_id": target_device_id}
        await self.authorize(device_id, "freeze", message, signature, "companion.revoke_refused", evidence)
        await self.consume_proof(message, ts, "companion.revoke_refused", evidence)
        return await self.revoke(target_device_id, f"device:{device_id}")

    async def touch(self, device_id: str) -> None:
        now = self.clock()
        await self.writer.run(lambda conn: device_store.touch_device(conn, device_id, now))
