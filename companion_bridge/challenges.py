"""Login challenges that cost the bridge no memory to hand out.

A challenge is a random part, the time it was issued and a MAC over both and the device id, under
a key that lives only in this process. Handing one out stores nothing, so strangers asking for
challenges cannot fill a table and lock the user out. A challenge is remembered only once a login
the device signed has used it, so it never works twice; that memory is bounded by how often a
paired device may log in, and forgotten once the challenge has expired anyway.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

CHALLENGE_TTL = 60.0
NONCE_PATTERN = r"^[0-9a-f]{64}$"
_RANDOM, _ISSUED = 16, 12  # hex digits of the random part and of the issue time (ms); the MAC is the rest
_MAC = 64 - _RANDOM - _ISSUED
_PRUNE_AT = 1024


class Challenges:
    def __init__(self, ttl: float = CHALLENGE_TTL, clock: Callable[[], float] = time.time) -> None:
        self.ttl, self.clock = ttl, clock
        self._key = secrets.token_bytes(32)
        self._used: dict[str, float] = {}  # challenge -> issue time, for challenges a signed login used

    def issue(self, device_id: str) -> str:
        body = secrets.token_hex(_RANDOM // 2) + f"{int(self.clock() * 1000):0{_ISSUED}x}"
        return body + self._mac(device_id, body)

    def usable(self, device_id: str, nonce: str) -> bool:
        """Issued here, for this device, not expired, and not used by a login yet."""
        body, mac = nonce[: _RANDOM + _ISSUED], nonce[_RANDOM + _ISSUED :]
        if len(mac) != _MAC or not hmac.compare_digest(mac, self._mac(device_id, body)):
            return False
        age = self.clock() - self._issued(nonce)
        return -1.0 <= age <= self.ttl and nonce not in self._used

    def use(self, nonce: str) -> None:
        """Called once the device's signature over the challenge verified."""
        if len(self._used) >= _PRUNE_AT:
            now = self.clock()
            self._used = {n: t for n, t in self._used.items() if now - t <= self.ttl + 1.0}
        self._used[nonce] = self._issued(nonce)

    def _mac(self, device_id: str, body: str) -> str:
        return hmac.new(self._key, f"{device_id}\n{body}".encode(), hashlib.sha256).hexdigest()[:_MAC]

    @staticmethod
    def _issued(nonce: str) -> float:
        return int(nonce[_RANDOM : _RANDOM + _ISSUED], 16) / 1000
