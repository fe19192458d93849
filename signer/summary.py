"""The signer's own one-line reading of a request, built from decoded bytes only.

This is what users see in chat and in the companion: never the agent's description.
"""

from __future__ import annotations

from collections import Counter

from policies.decode import TOKEN_SELECTORS
from policies.intent import (
    NATIVE,
    Approval,
    Claim,
    ContractCall,
    Decoded,
    Forbidden,
    RouterPayout,
    Swap,
    Transfer,
    Wrap,
)
from policies.model import Policy
from policies.units import format_amount


class Summarizer:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.index = policy.index
        self._payer_name = "the session key"  # set by each call (synchronous: no other call interleaves)

    def _amount(self, chain_id: int, asset: str, amount: int) -> str:
        info = self.index.asset_info(chain_id, asset)
        if info is None:
            token = "native units" if asset == NATIVE else f"base units of unknown token {asset}"
            return f"{amount} {token}"
        symbol, decimals = info
        return format_amount(amount, decimals, symbol)

    def _who(self, chain_id: int, address: str) -> str:
        name = self.index.address_name(chain_id, address)
        return f"{name} ({address})" if name else f"{address} (new address)"

    def _chain(self, chain_id: int) -> str:
        name = self.index.chain_name(chain_id)
        return f"{name} ({chain_id})" if name else f"unknown chain {chain_id}"

    def __call__(
        self, decoded: Decoded, payer: str | None = None, payer_name: str = "the session key"
    ) -> str:
        """`payer`: the account that pays a swap, wrap or unwrap (named `payer_name` when it receives
        the output: "your main account" on Tier 3); None for every other request."""
        self._payer_name = payer_name
        parts: list[str] = []
        # A token call the decoder turned into a transfer or approval needs no second line; any other
        # call on that token (transferAndCall, a mint, an unknown selector) is shown, whatever it is.
        explained: Counter[str] | None = None  # counted on the first token call only: most requests have none
        defi = self._defi_explained(decoded) if decoded.is_defi() else None
        for action in decoded.actions:
            if defi is not None and action in defi:
                continue  # the ETH paying a listed router or WETH, and its call: said by the swap or wrap itself
            if isinstance(action, Transfer):
                parts.append(
                    f"send {self._amount(action.chain_id, action.asset, action.amount)} "
                    f"to {self._who(action.chain_id, action.recipient)}"
                )
            elif isinstance(action, Approval):
                amount = (
                    "UNLIMITED"
                    if action.amount >= 2**255
                    else self._amount(action.chain_id, action.asset, action.amount)
                )
                parts.append(
                    f"{action.method}: let {self._who(action.chain_id, action.spender)} spend {amount}"
                )
            elif isinstance(action, ContractCall):
                if action.selector in TOKEN_SELECTORS:
                    if explained is None:
                        explained = Counter(
                            a.asset for a in decoded.actions if isinstance(a, (Transfer, Approval))
                        )
                    if explained[action.target] > 0:
                        explained[action.target] -= 1
                        continue
                parts.append(
                    f"call {self._who(action.chain_id, action.target)} "
                    f"selector 0x{action.selector.hex()}" + ("" if action.decoded else " (not decoded)")
                )
            elif isinstance(action, Forbidden):
                parts.append(f"FORBIDDEN: {action.reason}")
            elif isinstance(action, Swap):
                parts.append(self._swap(decoded, action, payer))
            elif isinstance(action, Wrap):
                asset = action.contract if action.unwrap else NATIVE
                parts.append(
                    f"{'unwrap' if action.unwrap else 'wrap'} {self._amount(action.chain_id, asset, action.amount)}"
                    f" at {self._who(action.chain_id, action.contract)}"
                )
            elif isinstance(action, Claim):
                listed = (self.index.distributors or {}).get((action.chain_id, action.distributor))
                amount = (
                    self._amount(action.chain_id, listed[1], action.amount)
                    if listed
                    else f"{action.amount} base units"
                )
                parts.append(
                    f"claim {amount} from {self._who(action.chain_id, action.distributor)} for "
                    f"{self._payee(action.chain_id, action.account, payer)}"
                )
            elif isinstance(action, RouterPayout):
                to = (
                    "the caller"
                    if action.recipient is None
                    else self._payee(action.chain_id, action.recipient, payer)
                )
                parts.append(f"{action.method}: the router pays what it holds to {to}")
        if not parts:
            parts.append("empty request")
        return "; ".join(parts) + f" on {self._chain(decoded.call.chain_id)}"

    def _defi_explained(self, decoded: Decoded) -> set[object]:
        """ETH sent to a listed router or WETH, and the calls on them, that a swap or wrap line says."""
        rules = self.index.swaps
        if rules is None:
            return {
                a
                for a in decoded.actions
                if isinstance(a, ContractCall)
                and a.decoded
                and (a.chain_id, a.target) in (self.index.distributors or {})
            }
        known = set(rules.routers) | set(rules.wethers) | set(self.index.distributors or {})
        return {
            a
            for a in decoded.actions
            if (isinstance(a, Transfer) and a.asset == NATIVE and (a.chain_id, a.recipient) in known)
            or (isinstance(a, ContractCall) and a.decoded and (a.chain_id, a.target) in known)
        }

    def _payee(self, chain_id: int, address: str, payer: str | None) -> str:
        return f"{self._payer_name} ({address})" if address == payer else self._who(chain_id, address)

    def _swap(self, decoded: Decoded, s: Swap, payer: str | None) -> str:
        rules = self.index.swaps
        router = rules.routers.get((s.chain_id, s.router)) if rules is not None else None
        paid = sum(
            a.amount
            for a in decoded.actions
            if isinstance(a, Transfer) and a.asset == NATIVE and a.recipient == s.router
        )
        asset_in = NATIVE if router is not None and s.token_in == router.weth and paid else s.token_in
        unwraps = any(isinstance(a, RouterPayout) and a.method == "unwrapWETH9" for a in decoded.actions)
        eth_out = router is not None and s.recipient == s.router and s.token_out == router.weth and unwraps
        asset_out = NATIVE if eth_out else s.token_out
        to = "" if eth_out else f", output to {self._payee(s.chain_id, s.recipient, payer)}"
        return (
            f"swap {self._amount(s.chain_id, asset_in, s.amount_in)} for at least "
            f"{self._amount(s.chain_id, asset_out, s.amount_out_min)} via {self._who(s.chain_id, s.router)}{to}"
        )
