"""What a paired device may see of the other paired devices: names, dates, revocation, a key fingerprint.

The bridge relays the signer's `companion.devices` reply to an authenticated device, field by field
through `DeviceView`, so nothing the signer adds to its device record later (a key, an address)
reaches a page unless it is named here. The list is informational: the signer does not sign it, so
a compromised bridge could misreport it, but it can neither pair nor revoke a device by doing so.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from signer.wire.messages import key_fingerprint


class DeviceView(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    device_id: str = Field(pattern=r"^dev_[0-9a-f]{16}$")
    name: str = Field(max_length=200)
    key_fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$")  # sha256 of the Ed25519 public key
    created_at: float
    last_seen: float | None
    revoked_at: float | None
    this_device: bool


class DeviceList(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    devices_rev: str
    devices: list[DeviceView]


def device_list(reply: dict[str, Any], caller: str) -> DeviceList:
    """The signer's device list as the caller may see it, oldest pairing first."""
    views = [
        DeviceView(
            device_id=d["device_id"],
            name=d["name"],
            key_fingerprint=key_fingerprint(d["public_key"]),
            created_at=d["created_at"],
            last_seen=d["last_seen"],
            revoked_at=d["revoked_at"],
            this_device=d["device_id"] == caller,
        )
        for d in reply["devices"]
    ]
    views.sort(key=lambda v: (v.created_at, v.device_id))
    return DeviceList(devices_rev=str(reply["devices_rev"]), devices=views)
