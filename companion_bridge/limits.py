"""The bridge's abuse limits: who is counted (a peer, a device, a socket), how much, and what a
refusal looks like. Default deny: over a limit means refused with a retry-after, logged (without
tokens or codes) and counted; a refusal never touches the delivery queue, so nothing is lost.

Peers are counted by their socket address. `X-Forwarded-For` is believed only from a proxy listed
in `trusted_proxies` (none by default): anyone else could write any address there and get a fresh
bucket per request. Per-device limits are charged only after the device proved itself (a valid
signature or token), so a stranger who knows a device id cannot spend that device's budget.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from companion_bridge.ratelimit import NS, Limiter, Rate, Verdict, take

log = logging.getLogger("owlia.bridge")
PAIRING_MEMORY_NS = 3600 * NS  # a pairing code lives at most an hour on the signer
MAX_PAIRINGS_TRACKED = 10_000
LOG_RATE = Rate(1, 0.1)  # refusal log lines per (kind, key): a flood must not fill the disk


@dataclass(frozen=True, slots=True)
class BridgeLimits:
    """Safe defaults for one user with a few devices; all are per key, so one noisy device or peer
    never slows another."""

    pair_per_peer: Rate = Rate(20, 1 / 3)  # pairing attempts
    pair_failure_penalty: int = 2  # a refused pairing is charged this many attempts more
    pair_failures_to_burn: int = 5  # refused attempts on one pairing id before the bridge refuses it for good
    auth_per_peer: Rate = Rate(600, 60)  # login challenges, token requests, WebSocket handshakes
    auth_failure_penalty: int = 5  # a bad signature or token is charged this much more
    tokens_per_device: Rate = Rate(10, 1 / 6)  # connection tokens issued
    connects_per_device: Rate = Rate(10, 1 / 6)  # WebSocket sessions opened
    answers_per_device: Rate = Rate(10, 1)  # approvals.answer calls
    messages_per_socket: Rate = Rate(50, 20)  # every companion -> bridge message
    max_message_bytes: int = 256 * 1024
    trusted_proxies: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.pair_failures_to_burn < 1 or self.max_message_bytes < 1024:
            raise ValueError("pair_failures_to_burn must be >= 1 and max_message_bytes >= 1024")
        if self.pair_failure_penalty < 0 or self.auth_failure_penalty < 0:
            raise ValueError("penalties cannot be negative")
        for proxy in self.trusted_proxies:  # compared as text with the peer: canonical form only
            if str(ipaddress.ip_address(proxy)) != proxy:
                raise ValueError(f"trusted proxy {proxy!r} is not an IP address in canonical form")


class Bucket:
    """One socket's own bucket: it dies with the socket, so it needs no table."""

    def __init__(self, rate: Rate, clock: Callable[[], int]) -> None:
        self.rate, self.clock = rate, clock
        self._tat = clock()

    def take(self) -> Verdict:
        verdict, self._tat = take(self.rate, self._tat, self.clock())
        return verdict


def retry_seconds(verdict: Verdict) -> int:
    """Whole seconds for a Retry-After header or a close reason; at least 1."""
    return max(1, math.ceil(verdict.retry_after))


@dataclass
class Guard:
    limits: BridgeLimits
    clock: Callable[[], int] = time.monotonic_ns
    refused: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        lim, clock = self.limits, self.clock
        self.pair_peers = Limiter(lim.pair_per_peer, clock=clock)
        self.auth_peers = Limiter(lim.auth_per_peer, clock=clock)
        self.tokens = Limiter(lim.tokens_per_device, clock=clock)
        self.connects = Limiter(lim.connects_per_device, clock=clock)
        self.answers = Limiter(lim.answers_per_device, clock=clock)
        self._pair_failures: dict[str, tuple[int, int]] = {}  # pairing id -> (failures, first failure ns)
        self._logs = Limiter(LOG_RATE, clock=clock)

    def peer(self, address: str | None, forwarded_for: str | None) -> str:
        """The address to count: the socket peer, or the client a trusted proxy reports."""
        host = address or "unknown"
        if host not in self.limits.trusted_proxies or not forwarded_for:
            return host
        for hop in reversed([h.strip() for h in forwarded_for.split(",")]):
            try:
                hop = str(ipaddress.ip_address(hop))
            except ValueError:
                return host  # garbage from behind the proxy: count it as the proxy itself
            if hop not in self.limits.trusted_proxies:
                return hop
            host = hop
        return host

    def check(self, what: str, limiter: Limiter, key: str) -> Verdict:
        verdict = limiter.take(key)
        if not verdict.allowed:
            self.refuse(what, key, verdict)
        return verdict

    def socket_bucket(self) -> Bucket:
        return Bucket(self.limits.messages_per_socket, self.clock)

    def refuse(self, what: str, key: str, verdict: Verdict | None = None) -> None:
        """Count every refusal under a short name (`pair`, `token`, `connect`, ...) and log it, at
        most one line per kind and key every 10 s (with the running total), so a flood cannot
        flood the log. `key` is a device id, peer address or pairing id: never a token or a code."""
        self.refused[what] += 1
        if self._logs.take((what, key)).allowed:
            after = f"; retry after {verdict.retry_after:.1f} s" if verdict is not None else ""
            log.warning(
                "bridge refused %s for %s%s (%d %s refusals so far)",
                what,
                key,
                after,
                self.refused[what],
                what,
            )

    def login_failed(self, peer: str) -> None:
        """A bad signature or token: counted, and charged to the peer beyond the attempt itself."""
        self.refuse("login", peer)
        self.auth_peers.penalize(peer, self.limits.auth_failure_penalty)

    # ---- pairing codes ------------------------------------------------------------------------

    def pairing_burnt(self, pairing_id: str) -> bool:
        """True once a pairing id took too many refusals (the user must show a new code)."""
        entry = self._pair_failures.get(pairing_id)
        return entry is not None and entry[0] >= self.limits.pair_failures_to_burn

    def _make_room(self) -> None:
        """A full table first forgets expired ids, then the least refused half. Junk ids from a
        flood have one refusal each, so a real code being guessed at stays burnt; and forgetting
        one never reopens it, because the signer spends a code after its own few wrong guesses.
        (Refusing every new id once full, as before, let a flood of junk ids lock pairing out.)"""
        now = self.clock()
        live = {k: v for k, v in self._pair_failures.items() if now - v[1] < PAIRING_MEMORY_NS}
        if len(live) >= MAX_PAIRINGS_TRACKED:
            live = dict(
                sorted(live.items(), key=lambda kv: kv[1][0], reverse=True)[: MAX_PAIRINGS_TRACKED // 2]
            )
        self._pair_failures = live

    def pairing_failed(self, pairing_id: str | None, peer: str) -> None:
        """A refused pairing: charged to the peer, and to the pairing id when it was well formed."""
        self.pair_peers.penalize(peer, self.limits.pair_failure_penalty)
        if pairing_id is None:
            return
        if pairing_id not in self._pair_failures and len(self._pair_failures) >= MAX_PAIRINGS_TRACKED:
            self._make_room()
        failures, first = self._pair_failures.get(pairing_id, (0, self.clock()))
        self._pair_failures[pairing_id] = (failures + 1, first)
        if failures + 1 == self.limits.pair_failures_to_burn:
            log.warning("bridge burnt pairing %s after %d refusals", pairing_id, failures + 1)
