"""The room under a session key's cap, counting the top-ups that are on their way but not mined yet.

The cap bounds what a leaked or misused session key can lose, so it has to hold against top-ups in
flight too. Reading the key's balance at "latest" misses a top-up that was approved and sent but is
not mined yet (about 12 s on mainnet, much longer on a congested chain): two approvals in that gap
each saw the whole room, and the key ended at twice its cap. So:

- room = cap - max(latest balance + top-ups in flight, pending balance). In flight are top-ups on
  record as signed (the `requests` row: durable, a restart still counts them) without a receipt
  yet, unless the main account has since mined past their nonce (then they never can be), plus
  those whose approval passed the cap check and is being recorded right now (`claim`, in memory:
  it stops counting once its row is signed, or it is answered otherwise, or it expires). The
  node's "pending" balance also sees transfers from elsewhere that it holds; the larger of the two
  never counts one of ours twice;
- a key has at most one top-up waiting for an answer (`waiting`);
- each key's top-ups go one at a time (`lock`), from reading the room to recording what used it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from signer import records
from signer.chain import ChainError
from signer.store import approvals as approval_store
from signer.store.requests import Connection
from signer.wire.approval_request import ApprovalRequestBody

if TYPE_CHECKING:
    from signer.chain import Chain
    from signer.tier2.session_keys import SessionKeyInfo


@dataclass(frozen=True, slots=True)
class _TopUp:
    request_id: str
    status: str
    value: int
    tx_hash: str | None
    sender: str | None
    nonce: int | None


class TopUps:
    def __init__(self, reader: Connection) -> None:
        self.reader = reader
        self._locks: dict[str, asyncio.Lock] = {}
        self._claims: dict[str, str] = {}  # request_id -> key_id: passed the cap check, not recorded yet
        self._settled: set[str] = set()  # signed top-ups known mined or replaced: asked about no more

    def lock(self, key_id: str) -> asyncio.Lock:
        """Held from reading a key's room to recording (or, for the dev path, mining) what uses it."""
        return self._locks.setdefault(key_id, asyncio.Lock())

    def waiting(self, key_id: str, now: float) -> str | None:
        """The request id of this key's top-up that is waiting for an answer, if any."""
        return next((t.request_id for t in self._of(key_id, now) if t.status == records.PENDING), None)

    def claim(self, request_id: str, key_id: str) -> None:
        """This approval passed the cap check: count it until its signed row does (call under `lock`)."""
        self._claims[request_id] = key_id

    async def room(self, key: SessionKeyInfo, chain: Chain, now: float) -> tuple[int, int]:
        """(what the key holds or has coming, how much more it may be funded). Call under `lock`."""
        # In flight first, balances after: one mined in between is then counted twice, never not at all.
        in_flight = await self._in_flight(key.key_id, chain, now)
        latest = await chain.balance(key.address)
        try:
            pending = await chain.balance(key.address, block="pending")
        except ChainError:  # a node without a pending state: the top-ups on record still count
            pending = latest
        counted = max(latest + in_flight, pending)
        return counted, max(0, key.balance_cap - counted)

    async def _in_flight(self, key_id: str, chain: Chain, now: float) -> int:
        total = 0
        for topup in self._of(key_id, now):
            if topup.status == records.PENDING:
                total += topup.value if topup.request_id in self._claims else 0
            elif await self._unmined(topup, chain):
                total += topup.value
        return total

    async def _unmined(self, topup: _TopUp, chain: Chain) -> bool:
        if topup.request_id in self._settled or topup.tx_hash is None:
            return False
        if topup.sender is None or topup.nonce is None:
            return True  # cannot tell: keep counting it (fail closed)
        if await chain.mined(topup.tx_hash) or await chain.mined_nonce(topup.sender) > topup.nonce:
            self._settled.add(topup.request_id)  # in the balance now, or never will be
            return False
        return True

    def _of(self, key_id: str, now: float) -> list[_TopUp]:
        """This key's top-ups still waiting for an answer, and those signed but not known to be mined."""
        rows = approval_store.topups(self.reader, now, records.IN_FLIGHT, records.PENDING)
        found = []
        for request_id, status, tx_hash, outcome, body_text in rows:
            body: ApprovalRequestBody = json.loads(body_text)
            session_key, tx = body.get("session_key"), body["tx"]
            if session_key is None or session_key["key_id"] != key_id or tx is None:
                continue
            result: records.SignOutcome | None = json.loads(outcome) if outcome else None
            found.append(
                _TopUp(
                    request_id,
                    status,
                    int(tx["value"]),
                    tx_hash,
                    None if result is None else result.get("sender"),
                    None if result is None else result.get("nonce"),
                )
            )
        pending = {t.request_id for t in found if t.status == records.PENDING}
        for request_id in [r for r, k in self._claims.items() if k == key_id and r not in pending]:
            del self._claims[
                request_id
            ]  # recorded as signed (counted from its row now), answered otherwise or expired
        return found
