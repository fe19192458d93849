"""The ledger snapshot and signer state a decision depends on, passed in so the evaluator stays pure."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class PriceQuote:
    """USD price of one whole token, in micro-dollars (integers only). `None` price means unknown."""

    usd_micros_per_unit: int
    decimals: int


QuoteKey = tuple[int, str, str, str, int, int]
"""(chain id, quoter, token in, token out, fee, amount in): what the signer asked a QuoterV2."""


@dataclass(frozen=True, slots=True)
class AssetChange:
    """One balance change the node's simulation reports: negative is an outflow."""

    account: str
    asset: str  # NATIVE or the token's address
    delta: int


@dataclass(frozen=True, slots=True)
class Simulated:
    """The node's simulation of the exact transaction (signer.simulate): its word, so it only ever
    makes a decision stricter. `error` is set when it could not be run or the call reverted."""

    changes: tuple[AssetChange, ...] = ()  # net per account and asset: what the owner is shown
    reverted: bool = False
    error: str = ""
    # every account's GROSS outflow per asset (negative), unnetted: an outflow hidden inside an
    # inflow of the same token still counts; the checks read these
    outflows: tuple[AssetChange, ...] = ()


@dataclass(frozen=True, slots=True)
class EvalContext:
    """Everything besides the request that the evaluator reads. Serializable into the audit log.

    `spent` maps (chain_id, asset, window_seconds) to the amount already reserved or committed in
    that rolling window, in base units; `spent_usd` the same in micro-dollars per window.
    """

    now: float
    spent: dict[tuple[int, str, int], int] = field(default_factory=dict)
    spent_usd: dict[int, int] = field(default_factory=dict)
    tx_count: dict[int, int] = field(default_factory=dict)  # window_seconds -> signed tx count
    new_recipients: dict[int, int] = field(default_factory=dict)  # window_seconds -> distinct new
    seen_recipients: frozenset[str] = frozenset()  # recipients already paid in the past (lowercase)
    prices: dict[tuple[int, str], PriceQuote | None] = field(default_factory=dict)
    session_key_expires_at: float | None = None  # None: no usable session key
    session_key_balance_cap: int | None = None
    frozen: bool = False
    # Swaps, wraps and unwraps only (docs/defi.md): the account that pays and receives, the signer's
    # own quote per swap (the highest the endpoints agree on; None when unreadable), the simulation.
    payer: str | None = None
    swap_quotes: dict[QuoteKey, int | None] = field(default_factory=dict)
    simulation: Simulated | None = None
