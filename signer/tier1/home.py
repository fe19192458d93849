"""What the owner's phone shows at a glance (`approvals.home`): balances read from the chain now, what
the agent spent in each of the policy's windows (from the ledger), and what Tier 3 still allows.

Read-only and best effort: a chain that cannot be read within its budget is named with an error and
the rest is still shown. Amounts carry units, the policy's price and address-book names, in the
same shape as the approval request's amounts (signer.wire.approval_request), so the page words them
the same way. Nothing here decides anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from policies.intent import NATIVE
from policies.kernel.addresses import to_checksum
from policies.model import USD_DECIMALS, Policy
from policies.units import format_amount
from signer.chain import Chain, ChainError
from signer.ledger import Ledger
from signer.tier2.session_keys import ACTIVE, SessionKeys
from signer.wire.approval_request import RequestBuilder

if TYPE_CHECKING:
    from signer.tier3.grants import Tier3

__all__ = ["READ_BUDGET", "Home"]

READ_BUDGET = 3.0  # seconds per chain read: a slow node leaves its line with an error, never the page waiting
T = TypeVar("T")


async def _within(read: Awaitable[T]) -> T:
    async with asyncio.timeout(READ_BUDGET):
        return await read


@dataclass(frozen=True)
class Home:
    """The pieces of the signer the summary reads (the daemon's real ones, or a test's)."""

    policy: Policy
    chains: Mapping[int, Chain]
    keys: SessionKeys
    ledger: Ledger
    tier3: Tier3 | None
    clock: Callable[[], float]

    def _chain_name(self, chain_id: int) -> str:
        return self.policy.index.chain_name(chain_id) or f"chain {chain_id}"

    async def summary(self, main_account: str | None) -> dict[str, Any]:
        builder = RequestBuilder(self.policy)
        now = self.clock()
        balances, tier3 = await asyncio.gather(self._balances(builder, main_account), self._tier3(builder))
        return {
            "main_account": main_account,
            "ts": now,
            "balances": balances,
            "spent": self._spent(builder, now),
            "spent_usd": self._spent_usd(now),
            "tier3": tier3,
        }

    async def _read(self, chain: Chain, address: str, token: str | None) -> int | str:
        """A balance, or why it could not be read (words, never a stack)."""
        try:
            return await _within(chain.balance(address, token))
        except (ChainError, TimeoutError, OSError) as exc:
            return f"could not read it from the node ({type(exc).__name__})"

    async def _balances(self, builder: RequestBuilder, main: str | None) -> list[dict[str, Any]]:
        """The main account on every chain (ETH and the policy's tokens there), and each active session
        key's ETH against its cap."""
        wanted: list[tuple[dict[str, Any], Chain, str, str]] = []
        for chain_id, chain in sorted(self.chains.items()):
            if main is None:
                break
            assets = [NATIVE] + sorted(
                a for (c, a) in self.policy.index.assets if c == chain_id and a != NATIVE
            )
            for asset in assets:
                line: dict[str, Any] = {
                    "chain_id": chain_id,
                    "chain": self._chain_name(chain_id),
                    "holder": "main",
                    "address": to_checksum(main),
                    "name": self.policy.index.address_name(chain_id, main.lower()),
                }
                wanted.append((line, chain, main, asset))
        for info in self.keys.infos():
            key_chain = self.chains.get(info.chain_id)
            if info.status is not ACTIVE or key_chain is None:
                continue
            line = {
                "chain_id": info.chain_id,
                "chain": self._chain_name(info.chain_id),
                "holder": "session_key",
                "address": to_checksum(info.address),
                "name": self.policy.index.address_name(info.chain_id, info.address.lower()),
                "key_id": info.key_id,
                "expires_at": info.expires_at,
                "cap": builder.amount(info.chain_id, NATIVE, info.balance_cap),
            }
            wanted.append((line, key_chain, info.address, NATIVE))
        read: list[int | str] = await asyncio.gather(
            *(
                self._read(chain, address, None if asset == NATIVE else asset)
                for _, chain, address, asset in wanted
            )
        )
        out = []
        for (line, _, _, asset), value in zip(wanted, read):
            if isinstance(value, str):  # no amount at all rather than a false zero
                out.append({**line, "asset": None, "error": value})
            else:
                out.append({**line, "asset": builder.amount(line["chain_id"], asset, value), "error": None})
        return out

    def _spent(self, builder: RequestBuilder, now: float) -> list[dict[str, Any]]:
        """Every asset window of the policy: what counts against it now (the ledger's own sum)."""
        out = []
        for (chain_id, asset), rule in sorted(self.policy.index.assets.items()):
            for window in rule.windows:
                spent = self.ledger.spent(chain_id, asset, now - window.seconds)
                out.append(
                    {
                        "chain_id": chain_id,
                        "chain": self._chain_name(chain_id),
                        "window": window.label,
                        "seconds": window.seconds,
                        "spent": builder.amount(chain_id, asset, spent),
                        "limit": builder.amount(chain_id, asset, window.limit),
                    }
                )
        return out

    def _spent_usd(self, now: float) -> list[dict[str, Any]]:
        usd = self.policy.index.usd
        if usd is None:
            return []

        def dollars(micros: int) -> str:
            return format_amount(micros, USD_DECIMALS, "").strip()

        return [
            {
                "window": w.label,
                "seconds": w.seconds,
                "spent_usd": dollars(self.ledger.spent_usd(now - w.seconds)),
                "limit_usd": dollars(w.limit),
            }
            for w in usd.windows
        ]

    async def _tier3(self, builder: RequestBuilder) -> list[dict[str, Any]]:
        """Each live grant's lanes: the words, and what the chain says is left this period."""
        if self.tier3 is None:
            return []
        try:
            grants = await _within(self.tier3.status(self.policy))
        except (ChainError, TimeoutError, OSError) as exc:
            return [{"error": f"could not read Tier 3 from the node ({type(exc).__name__})", "lanes": []}]
        out = []
        for g in grants:
            lanes = []
            for lane in g.lanes:
                token = lane.asset if lane.asset == NATIVE or lane.asset.startswith("0x") else None
                lanes.append(
                    {
                        "words": lane.words,
                        "left_in_period": builder.amount(g.chain_id, token, int(lane.left_in_period))
                        if token is not None and lane.left_in_period is not None
                        else None,
                        "period_ends_at": lane.period_ends_at,
                        "calls_left": lane.calls_left,
                        "disabled": lane.disabled,
                        "error": lane.error,
                    }
                )
            out.append(
                {
                    "chain_id": g.chain_id,
                    "chain": self._chain_name(g.chain_id),
                    "grant_id": g.grant_id,
                    "delegate": to_checksum(g.delegate),
                    "ended_on_chain": g.ended_on_chain,
                    "lanes": lanes,
                    "error": None,
                }
            )
        return out
