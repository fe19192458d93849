"""The spend ledger's in-memory view: rolling-window sums that reserve before signing.

The daemon decides and reserves in one synchronous step on its event loop, so two concurrent
requests can never both see the room that only one of them fits into. The durable copy is the
`spends` / `requests` / `recipients` tables; `Ledger.load` rebuilds this view from them at
start-up, so a restart never resets a window.
"""

from __future__ import annotations

import bisect
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

    # ---- building --------------------------------------------------------------------------

    def add_spend(self, request_id: str, chain_id: int, asset: str, amount: int, usd: int | None, ts: float) -> None:
        self._spend.setdefault((chain_id, asset), _Series()).add(ts, amount, request_id)
        if usd is not None:
            self._usd.add(ts, usd, request_id)

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
        assets = {(a.chain_id, a.asset) for a in decoded.transfers()} | {
            (a.chain_id, a.asset) for a in decoded.approvals()
        }
        spent: dict[tuple[int, str, int], int] = {}
        for chain_id, asset in assets:
            series = self._spend.get((chain_id, asset))
            for period in windows:
                spent[(chain_id, asset, period)] = series.sum_since(now - period) if series else 0
        seen = frozenset(
            t.recipient for t in decoded.transfers() if (t.chain_id, t.recipient) in self._recipients
        )
        return EvalContext(
            now=now,
            spent=spent,
            spent_usd={p: self._usd.sum_since(now - p) for p in windows},
            tx_count={HOUR: self._txs.sum_since(now - HOUR)},
            new_recipients={DAY: self._new_recipients.sum_since(now - DAY)},
            seen_recipients=seen,
            prices=prices or {},
            session_key_expires_at=state.session_key_expires_at,
            session_key_balance_cap=state.session_key_balance_cap,
            frozen=state.frozen,
        )

    def spent(self, chain_id: int, asset: str, since: float) -> int:
        """What counts against a window of one asset: reservations stamped after `since`, not released."""
        series = self._spend.get((chain_id, asset))
        return series.sum_since(since) if series else 0

    def reserve(self, request_id: str, decision: Decision, decoded: Decoded, now: float) -> None:
        """Count an allowed request at once; the engine persists the same rows before it signs."""
        for spend in decision.spends:
            self.add_spend(request_id, spend.chain_id, spend.asset, spend.amount, spend.usd_micros, now)
        self.add_tx(request_id, now)
        for recipient in decision.new_recipients:
            self.add_recipient(decoded.call.chain_id, recipient, now, request_id)

    def release(self, request_id: str) -> None:
        """Undo a reservation whose transaction provably never left the signer."""
        for series in self._spend.values():
            series.remove_owner(request_id)
        self._usd.remove_owner(request_id)
        self._txs.remove_owner(request_id)
