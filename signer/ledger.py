"""The spend ledger's in-memory view: rolling-window sums that reserve before signing.

The daemon decides and reserves in one synchronous step on its event loop, so two concurrent
requests can never both see the room that only one of them fits into. The durable copy is the
`spends` / `requests` / `recipients` tables; `Ledger.load` rebuilds this view from them at
start-up, so a restart never resets a window.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from policies.context import EvalContext, PriceQuote
from policies.decision import Decision
from policies.intent import Decoded

HOUR = 3600
DAY = 86400


@dataclass
class _Series:
    """Time-ordered amounts with prefix sums: a window sum is two bisects and a subtraction."""

    times: list[float] = field(default_factory=list)
    amounts: list[int] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    cumulative: list[int] = field(default_factory=lambda: [0])

    def add(self, ts: float, amount: int, owner: str) -> None:
        if not self.times or ts >= self.times[-1]:
            self.times.append(ts)
            self.amounts.append(amount)
            self.owners.append(owner)
            self.cumulative.append(self.cumulative[-1] + amount)
            return
        at = bisect.bisect_right(self.times, ts)
        self.times.insert(at, ts)
        self.amounts.insert(at, amount)
        self.owners.insert(at, owner)
        self._rebuild(at)

    def remove_owner(self, owner: str) -> None:
        first = None
        for i, who in enumerate(self.owners):
            if who == owner and self.amounts[i]:
                self.amounts[i] = 0
                first = i if first is None else first
        if first is not None:
            self._rebuild(first)

    def _rebuild(self, start: int) -> None:
        del self.cumulative[start + 1 :]
        running = self.cumulative[start]
        for amount in self.amounts[start:]:
            running += amount
            self.cumulative.append(running)

    def sum_since(self, since: float) -> int:
        """Sum of entries with ts > since."""
        at = bisect.bisect_right(self.times, since)
        return self.cumulative[-1] - self.cumulative[at]


@dataclass(frozen=True, slots=True)
class _Held:
    """The spends of a transaction that left the signer and is not yet proven mined or dead."""

    ts: float
    items: tuple[tuple[tuple[int, str], int, int | None], ...]  # ((chain, asset), amount, usd micros)


@dataclass(frozen=True, slots=True)
class SignerState:
    """Signer facts the policy reads besides the ledger."""

    session_key_expires_at: float | None
    session_key_balance_cap: int | None
    frozen: bool


class Ledger:
    def __init__(self) -> None:
        self._spend: dict[tuple[int, str], _Series] = {}
        self._usd = _Series()
        self._txs = _Series()
        self._recipients: dict[tuple[int, str], float] = {}
        self._new_recipients = _Series()
        # Transactions in flight: their spends count in every window, however old, until settled.
        self._held: dict[str, _Held] = {}
        self._held_oldest = float("inf")

    # ---- building --------------------------------------------------------------------------

    def add_spend(
        self, request_id: str, chain_id: int, asset: str, amount: int, usd: int | None, ts: float
    ) -> None:
        self._series((chain_id, asset)).add(ts, amount, request_id)
        if usd is not None:
            self._usd.add(ts, usd, request_id)

    def _series(self, key: tuple[int, str]) -> _Series:
        """The asset's series, made on its first spend (`setdefault` would build a spare one every call)."""
        series = self._spend.get(key)
        if series is None:
            series = self._spend[key] = _Series()
        return series

    def add_tx(self, request_id: str, ts: float) -> None:
        self._txs.add(ts, 1, request_id)

    def add_recipient(self, chain_id: int, address: str, ts: float, request_id: str) -> None:
        if (chain_id, address) not in self._recipients:
            self._recipients[(chain_id, address)] = ts
            self._new_recipients.add(ts, 1, request_id)

    # ---- the two operations the engine uses -------------------------------------------------

    def context(
        self,
        decoded: Decoded,
        windows: set[int],
        now: float,
        state: SignerState,
        prices: dict[tuple[int, str], PriceQuote | None] | None = None,
    ) -> EvalContext:
        transfers = decoded.transfers()
        assets = {(a.chain_id, a.asset) for a in transfers} | {
            (a.chain_id, a.asset) for a in decoded.approvals()
        }
        # `spent` for every window, with each asset's series looked up once (this runs on every request)
        spent: dict[tuple[int, str, int], int] = {}
        for chain_id, asset in assets:
            key = (chain_id, asset)
            series = self._spend.get(key)
            for period in windows:
                since = now - period
                spent[(chain_id, asset, period)] = (series.sum_since(since) if series else 0) + self._aged(
                    key, since
                )
        spent_usd = {p: self._usd.sum_since(now - p) + self._aged(None, now - p) for p in windows}
        recipients = self._recipients
        seen = frozenset(t.recipient for t in transfers if (t.chain_id, t.recipient) in recipients)
        return EvalContext(
            now=now,
            spent=spent,
            spent_usd=spent_usd,
            tx_count={HOUR: self._txs.sum_since(now - HOUR)},
            new_recipients={DAY: self._new_recipients.sum_since(now - DAY)},
            seen_recipients=seen,
            prices=prices or {},
            session_key_expires_at=state.session_key_expires_at,
            session_key_balance_cap=state.session_key_balance_cap,
            frozen=state.frozen,
        )

    def spent(self, chain_id: int, asset: str, since: float) -> int:
        """What counts against a window of one asset: reservations stamped after `since` and not
        released, plus those of transactions still in flight, however old (`hold`)."""
        series = self._spend.get((chain_id, asset))
        return (series.sum_since(since) if series else 0) + self._aged((chain_id, asset), since)

    def spent_usd(self, since: float) -> int:
        """What counts against a USD window (micro-dollars), as `spent` for one asset."""
        return self._usd.sum_since(since) + self._aged(None, since)

    def reserve(self, request_id: str, decision: Decision, decoded: Decoded, now: float) -> None:
        """Count an allowed request at once; the engine persists the same rows before it signs."""
        for spend in decision.spends:
            self.add_spend(request_id, spend.chain_id, spend.asset, spend.amount, spend.usd_micros, now)
        self.add_tx(request_id, now)
        for recipient in decision.new_recipients:
            self.add_recipient(decoded.call.chain_id, recipient, now, request_id)

    def release(self, request_id: str) -> None:
        """Undo a reservation whose transaction provably never left the signer, or can never be mined."""
        for series in self._spend.values():
            series.remove_owner(request_id)
        self._usd.remove_owner(request_id)
        self._txs.remove_owner(request_id)
        self._unhold(request_id)

    # ---- transactions in flight (signer.receipts) --------------------------------------------

    def hold(self, request_id: str, ts: float, spends: Iterable[tuple[int, str, int, int | None]]) -> None:
        """The request's transaction left the signer: until `settle` or `release`, its spends
        (chain, asset, amount, usd micros) reserved at `ts` count in every window, however long
        ago `ts` is: a transaction held back by a node can be mined at any time until proven dead."""
        items = tuple(((chain_id, asset), amount, usd) for chain_id, asset, amount, usd in spends)
        if items:
            self._held[request_id] = _Held(ts, items)
            self._held_oldest = min(self._held_oldest, ts)

    def holds(self, request_id: str) -> bool:
        return request_id in self._held

    def settle(self, request_id: str, at: float) -> bool:
        """The transaction is mined (seen at `at`): its spends count from `at` on (it moved value at
        some moment up to `at`, so a window is never shown room it does not have). True if it was held."""
        held = self._unhold(request_id)
        if held is None:
            return False
        if at > held.ts:  # every entry of the request out first, then each back in at `at`
            for key in {key for key, _, _ in held.items}:
                if key in self._spend:
                    self._spend[key].remove_owner(request_id)
            self._usd.remove_owner(request_id)
            for key, amount, usd in held.items:
                self._series(key).add(at, amount, request_id)
                if usd is not None:
                    self._usd.add(at, usd, request_id)
        return True

    def _unhold(self, request_id: str) -> _Held | None:
        held = self._held.pop(request_id, None)
        if held is not None and held.ts <= self._held_oldest:
            self._held_oldest = min((h.ts for h in self._held.values()), default=float("inf"))
        return held

    def _aged(self, key: tuple[int, str] | None, since: float) -> int:
        """Held spends stamped at or before `since` (outside the window's sum); key None: in USD."""
        if self._held_oldest > since:  # the common case: nothing held has aged out of any window
            return 0
        total = 0
        for held in self._held.values():
            if held.ts <= since:
                for item_key, amount, usd in held.items:
                    if key is None:
                        total += usd or 0
                    elif item_key == key:
                        total += amount
        return total
