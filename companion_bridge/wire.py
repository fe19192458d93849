"""What the untrusted bridge server and the trusted companion share: the formats on the wire, nothing else.

The companion never imports the server's modules (FastAPI, the queue, the rate limiter): it would
then run code it must not trust, and a phone app reimplementing it needs only these formats.
"""

from __future__ import annotations

from signer.wire.messages import BRIDGE_AUTH_DOMAIN, signed_message


def auth_message(device_id: str, audience: str, nonce: str, ts: float) -> bytes:
    """The bytes a device signs to log in to a bridge: bound to that bridge (`aud`) and one challenge nonce."""
    return signed_message(
        BRIDGE_AUTH_DOMAIN, {"device_id": device_id, "aud": audience, "nonce": nonce, "ts": ts}
    )
