"""Fee ceilings: what the RPC node says about the fee market is bounded before anything is signed.

The tip (`eth_maxPriorityFeePerGas`) and the base fee come from the node. Gas is not counted against
the policy's limits (the session key pays its own fees; its balance cap bounds them), so without a
ceiling a lying or broken node picks the tip every transaction pays: one 0.001 ETH transfer at a
4000 gwei tip burns 0.085 ETH. So the tip is clamped to the chain's `max_priority_fee_gwei`, and a
transaction whose max fee per gas would pass `max_fee_gwei` is not signed at all (its request is
denied as `chain.max_fee` with the reason). A clamp is logged and written into the request's
outcome and its `sign.signed` record (`fee_clamped`), so a node that lies is visible. Amounts are
integer wei, never negative, and the max fee is never below the tip (`Fees` refuses otherwise). The
gas a transaction may use is bounded separately (`max_gas`, signer.chain), so the most one can burn
is `max_gas x max_fee_gwei`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from signer.records import FeeClamp
from signer.wire.settings import GWEI, ChainSettings

if TYPE_CHECKING:
    from signer.chain import Chain
    from signer.tier2.signing import Ending

log = logging.getLogger("owlia.signer")


@dataclass(frozen=True, slots=True)
class Fees:
    max_fee_per_gas: int
    max_priority_fee_per_gas: int
    node_priority_fee: int = 0  # what the node asked for: above max_priority_fee_per_gas when clamped

    def __post_init__(self) -> None:
        """Checked once per quote: a negative tip, or a tip above the max fee, is never signed."""
        if not 0 <= self.max_priority_fee_per_gas <= self.max_fee_per_gas or self.node_priority_fee < 0:
            raise InvalidFees(
                f"invalid fees: max fee {self.max_fee_per_gas}, tip {self.max_priority_fee_per_gas} wei"
            )

    @property
    def clamped(self) -> bool:
        return self.node_priority_fee > self.max_priority_fee_per_gas


class FeeCeilingExceeded(Exception):
    """The max fee per gas would pass the chain's ceiling; the message says so for the record."""


class InvalidFees(ValueError):
    """A negative fee, or a max fee below the tip: what only a broken or lying node can lead to."""


def quote(base_fee: int, node_priority: int, settings: ChainSettings) -> Fees:
    """The fees to sign with: the node's tip up to the ceiling, and twice the base fee on top."""
    if base_fee < 0 or node_priority < 0:
        raise InvalidFees(f"the RPC node sent a negative fee (base fee {base_fee}, tip {node_priority} wei)")
    priority = min(node_priority, settings.max_priority_fee_wei)
    max_fee = 2 * base_fee + priority
    if max_fee > settings.max_fee_wei:
        raise FeeCeilingExceeded(
            f"the max fee per gas would be {_gwei(max_fee)} gwei (base fee {_gwei(base_fee)} gwei from the node), "
            f"above the ceiling of chain {settings.id} (max_fee_gwei: {settings.max_fee_gwei}); nothing was signed"
        )
    fees = Fees(max_fee, priority, node_priority)
    if fees.clamped:
        log.warning(
            "chain %s: the node asked a priority fee of %s gwei; clamped to %s gwei (max_priority_fee_gwei)",
            settings.id,
            _gwei(node_priority),
            settings.max_priority_fee_gwei,
        )
    return fees


def note_clamp(ending: Ending, chain: Chain) -> Ending:
    """The ending as it will be recorded, saying so when the tip its transaction pays was clamped.

    Matched by the signed fee fields against the chain's recent clamped quotes, so a quote refreshed
    by another request meanwhile cannot be mistaken for this one's.
    """
    if ending.raw_tx is None or not chain.clamped_quotes:  # the usual case: one attribute read
        return ending
    tx = ending.audit_body.get("tx") or {}
    fees = chain.clamped_quotes.get(
        (int(tx.get("max_fee_per_gas", -1)), int(tx.get("max_priority_fee_per_gas", -1)))
    )
    if fees is None:
        return ending
    note: FeeClamp = {
        "node_priority_fee_per_gas": str(fees.node_priority_fee),
        "max_priority_fee_per_gas": str(fees.max_priority_fee_per_gas),
        "reason": "the RPC node asked a higher priority fee than this chain's max_priority_fee_gwei",
    }
    return replace(
        ending,
        result={**ending.result, "fee_clamped": note},
        audit_body={**ending.audit_body, "fee_clamped": note},
    )


def _gwei(wei: int) -> str:
    whole, frac = divmod(wei, GWEI)
    return f"{whole}.{frac:09d}".rstrip("0").rstrip(".") if frac else str(whole)
