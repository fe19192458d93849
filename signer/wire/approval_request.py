"""The canonical approval request: what the companion shows and what the device signs over.

Built by the signer from decoded bytes and its own policy (names, symbols, decimals), never from
the agent's words: the agent's reason is carried, but only under `agent_reason_unverified`. The
request hash is sha256 of the canonical JSON, so the companion recomputes it from what it received
and a bridge that rewrites anything in flight makes every answer fail verification.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from policies.decision import Decision
from policies.kernel.addresses import to_checksum
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
from policies.model import USD_DECIMALS, Policy
from policies.units import format_amount

__all__ = ["VERSION", "RequestBuilder", "escalation_json", "request_hash"]

VERSION = 1


def request_hash(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def escalation_json(decision: Decision) -> dict[str, Any]:
    """Why a request waits for the companion: the rule, its reason and every finding."""
    return {
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "findings": [
            {"rule_id": f.rule_id, "reason": f.reason, "outcome": f.outcome.value} for f in decision.findings
        ],
    }


class RequestBuilder:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.index = policy.index

    def _asset(self, chain_id: int, asset: str, amount: int) -> dict[str, Any]:
        info = self.index.asset_info(chain_id, asset)
        token = "native" if asset == NATIVE else to_checksum(asset)
        if info is None:
            return {
                "token": token,
                "symbol": None,
                "amount": None,
                "amount_base_units": str(amount),
                "note": "unknown token: amount shown in base units only",
            }
        symbol, decimals = info
        shown = {
            "token": token,
            "symbol": symbol,
            "amount": format_amount(amount, decimals, symbol),
            "amount_base_units": str(amount),
            "decimals": decimals,
        }
        rule = self.index.asset_rule(chain_id, asset)
        if rule is not None and rule.price is not None:  # the policy's own price: the companion shows dollars
            shown["price_usd"] = format_amount(rule.price.usd_micros_per_unit, USD_DECIMALS, "").strip()
        return shown

    def amount(self, chain_id: int, asset: str, amount: int) -> dict[str, Any]:
        """An amount as the companion shows it: units, symbol, and the policy's price when it has one."""
        return self._asset(chain_id, asset, amount)

    def _party(self, chain_id: int, address: str) -> dict[str, Any]:
        name = self.index.address_name(chain_id, address)
        return {"address": to_checksum(address), "name": name, "label": name or "new address"}

    def action(self, action: Any) -> dict[str, Any]:
        if isinstance(action, Transfer):
            return {
                "type": "transfer",
                **self._asset(action.chain_id, action.asset, action.amount),
                "recipient": self._party(action.chain_id, action.recipient),
            }
        if isinstance(action, Approval):
            unlimited = action.amount >= 2**255
            return {
                "type": "approval",
                "method": action.method,
                "unlimited": unlimited,
                **self._asset(action.chain_id, action.asset, action.amount),
                "spender": self._party(action.chain_id, action.spender),
            }
        if isinstance(action, ContractCall):
            return {
                "type": "call",
                "target": self._party(action.chain_id, action.target),
                "selector": "0x" + action.selector.hex(),
                "depth": action.depth,
                "value": str(action.value),
                "decoded": action.decoded,
            }
        if isinstance(action, Swap):
            return {
                "type": "swap",
                "router": self._party(action.chain_id, action.router),
                "token_in": self._asset(action.chain_id, action.token_in, action.amount_in),
                "token_out_min": self._asset(action.chain_id, action.token_out, action.amount_out_min),
                "recipient": self._party(action.chain_id, action.recipient),
                "deadline": action.deadline,
            }
        if isinstance(action, Wrap):
            asset = action.contract if action.unwrap else NATIVE
            return {
                "type": "unwrap" if action.unwrap else "wrap",
                **self._asset(action.chain_id, asset, action.amount),
                "contract": self._party(action.chain_id, action.contract),
            }
        if isinstance(action, RouterPayout):
            return {
                "type": "payout",
                "method": action.method,
                "router": self._party(action.chain_id, action.router),
                "recipient": None
                if action.recipient is None
                else self._party(action.chain_id, action.recipient),
            }
        if isinstance(action, Claim):
            token = (self.index.distributors or {}).get((action.chain_id, action.distributor), ("", ""))[1]
            amount = (
                self._asset(action.chain_id, token, action.amount)
                if token
                else {"amount": None, "amount_base_units": str(action.amount), "token": None, "symbol": None}
            )
            return {
                "type": "claim",
                **amount,
                "distributor": self._party(action.chain_id, action.distributor),
                "account": self._party(action.chain_id, action.account),
            }
        assert isinstance(action, Forbidden)
        return {"type": "forbidden", "rule_id": action.rule_id, "reason": action.reason}

    def _with_context(self, decoded: Decoded, action: Any) -> dict[str, Any]:
        """An action as `action` words it, and for a swap what the payer really gives and gets: ETH
        when it pays the router in ETH (which wraps it) or has the output unwrapped, the venue's name
        from the policy's `swaps:` list, and the policy's slippage bound."""
        shown = self.action(action)
        if isinstance(action, Wrap):  # the other side of a wrap, in the policy's symbol for the token
            other = NATIVE if action.unwrap else action.contract
            return {**shown, "becomes": self._asset(action.chain_id, other, action.amount)}
        if not isinstance(action, Swap):
            return shown
        rules = self.index.swaps
        router = rules.routers.get((action.chain_id, action.router)) if rules is not None else None
        paid = any(
            isinstance(a, Transfer) and a.asset == NATIVE and a.recipient == action.router and a.amount
            for a in decoded.actions
        )
        unwraps = any(isinstance(a, RouterPayout) and a.method == "unwrapWETH9" for a in decoded.actions)
        pays_eth = router is not None and action.token_in == router.weth and paid
        gets_eth = (
            router is not None
            and action.recipient == action.router
            and action.token_out == router.weth
            and unwraps
        )
        return {
            **shown,
            "pays": self._asset(action.chain_id, NATIVE if pays_eth else action.token_in, action.amount_in),
            "gets_at_least": self._asset(
                action.chain_id, NATIVE if gets_eth else action.token_out, action.amount_out_min
            ),
            "venue": router.name if router is not None else None,
            "max_slippage_bps": rules.max_slippage_bps if rules is not None else None,
        }

    def build(
        self,
        *,
        request_id: str,
        kind: str,
        decoded: Decoded,
        summary: str,
        decision: Decision,
        agent_reason: str | None,
        tx: dict[str, Any] | None,
        created_at: float,
        expires_at: float,
        simulation: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        chain_id = decoded.call.chain_id
        name = self.index.chain_name(chain_id)
        return {
            "v": VERSION,
            "request_id": request_id,
            "kind": kind,
            "chain_id": chain_id,
            "chain": f"{name} ({chain_id})" if name else f"unknown chain {chain_id}",
            "tx": tx,
            "summary": summary,
            "actions": [self._with_context(decoded, a) for a in decoded.actions],
            "escalation": escalation_json(decision),
            "agent_reason_unverified": agent_reason,
            "created_at": created_at,
            "expires_at": expires_at,
            # the node's simulation of a swap, wrap or unwrap: {"source", "changes": [...]} (signer.simulate)
            **({"simulation": simulation} if simulation is not None else {}),
        }
