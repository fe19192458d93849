"""The lookups the evaluator reads on every request, built once per policy.

A plain slotted dataclass rather than private attributes of the pydantic `Policy`: pydantic
serves those through `__getattr__`, which cost a few microseconds per lookup, a dozen times per
request. Hot paths take `policy.index` once and ask it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from policies.intent import NATIVE
from policies.units import lookalike_key

if TYPE_CHECKING:
    from policies.model import AssetRule, SwapIndex, UsdRule


@dataclass(frozen=True, slots=True)
class PolicyIndex:
    chains: dict[int, str]
    assets: dict[tuple[int, str], AssetRule]
    names: dict[tuple[int, str], str]
    book: frozenset[tuple[int, str]]
    spenders: frozenset[tuple[int, str]]
    contracts: dict[tuple[int, str], frozenset[bytes]]
    lookalikes: dict[tuple[int, str, str], tuple[str, ...]]
    usd: UsdRule | None
    window_seconds: frozenset[int]
    opaque: dict[tuple[int, str, bytes], int]  # (chain, target, selector) -> max native value, base units
    swaps: SwapIndex | None = None  # the `swaps:` section, when the policy has one
    distributors: dict[tuple[int, str], tuple[str, str]] | None = None  # (chain, address) -> (name, token)

    def has_chain(self, chain_id: int) -> bool:
        return chain_id in self.chains

    def chain_name(self, chain_id: int) -> str | None:
        return self.chains.get(chain_id)

    def asset_info(self, chain_id: int, asset: str) -> tuple[str, int] | None:
        rule = self.assets.get((chain_id, asset))
        return None if rule is None else (rule.symbol, rule.decimals)

    def asset_rule(self, chain_id: int, asset: str) -> AssetRule | None:
        return self.assets.get((chain_id, asset))

    def is_token(self, chain_id: int, address: str) -> bool:
        """Is this contract one of the policy's ERC-20 assets?"""
        return address != NATIVE and (chain_id, address) in self.assets

    def address_name(self, chain_id: int, address: str) -> str | None:
        return self.names.get((chain_id, address))

    def in_address_book(self, chain_id: int, address: str) -> bool:
        return (chain_id, address) in self.book

    def is_allowed_spender(self, chain_id: int, address: str) -> bool:
        return (chain_id, address) in self.spenders

    def contract_selectors(self, chain_id: int, address: str) -> frozenset[bytes] | None:
        """Allowed selectors of a listed contract; None when the contract is not listed."""
        return self.contracts.get((chain_id, address))

    def opaque_max_value(self, chain_id: int, target: str, selector: bytes) -> int | None:
        """The value bound of an `opaque_calls` entry; None when the call is not named there."""
        return self.opaque.get((chain_id, target, selector))

    def lookalike_of(self, chain_id: int, address: str) -> str | None:
        """A different known address (book, spender, contract) that `address` imitates, if any."""
        for known in self.lookalikes.get((chain_id, *lookalike_key(address)), ()):
            if known != address:
                return known
        return None
