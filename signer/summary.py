"""The signer's own one-line reading of a request, built from decoded bytes only.

This is what users see in chat and in the companion: never the agent's description.
"""

from __future__ import annotations

from collections import Counter

from policies.decode import TOKEN_SELECTORS
from policies.intent import NATIVE, Approval, ContractCall, Decoded, Forbidden, RouterPayout, Swap, Transfer, Wrap
from policies.model import Policy
from policies.units import format_amount


class Summarizer:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.index = policy.index

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

    def __call__(self, decoded: Decoded) -> str:
        parts: list[str] = []
        # A token call the decoder turned into a transfer or approval needs no second line; any other
        # call on that token (transferAndCall, a mint, an unknown selector) is shown, whatever it is.
        explained: Counter[str] | None = None  # counted on the first token call only: most requests have none
        for action in decoded.actions:
            if isinstance(action, Transfer):
                parts.append(f"send {self._amount(action.chain_id, action.asset, action.amount)} "
                             f"to {self._who(action.chain_id, action.recipient)}")
            elif isinstance(action, Approval):
                amount = ("UNLIMITED" if action.amount >= 2**255
                          else self._amount(action.chain_id, action.asset, action.amount))
                parts.append(f"{action.method}: let {self._who(action.chain_id, action.spender)} spend {amount}")
            elif isinstance(action, ContractCall):
                if action.selector in TOKEN_SELECTORS:
                    if explained is None:
                        explained = Counter(a.asset for a in decoded.actions if isinstance(a, (Transfer, Approval)))
                    if explained[action.target] > 0:
                        explained[action.target] -= 1
                        continue
                parts.append(f"call {self._who(action.chain_id, action.target)} "
                             f"selector 0x{action.selector.hex()}" + ("" if action.decoded else " (not decoded)"))
            elif isinstance(action, Forbidden):
                parts.append(f"FORBIDDEN: {action.reason}")
            elif isinstance(action, Swap):
                parts.append(f"swap {self._amount(action.chain_id, action.token_in, action.amount_in)} for at least "
                             f"{self._amount(action.chain_id, action.token_out, action.amount_out_min)} "
                             f"to {self._who(action.chain_id, action.recipient)}")
            elif isinstance(action, Wrap):
                parts.append(f"{'unwrap' if action.unwrap else 'wrap'} "
                             f"{self._amount(action.chain_id, action.contract if action.unwrap else NATIVE, action.amount)}")
            elif isinstance(action, RouterPayout):
                to = "the caller" if action.recipient is None else self._who(action.chain_id, action.recipient)
                parts.append(f"{action.method}: the router pays what it holds to {to}")
        if not parts:
            parts.append("empty request")
        return "; ".join(parts) + f" on {self._chain(decoded.call.chain_id)}"
