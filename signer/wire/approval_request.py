"""The canonical approval request: what the companion shows and what the device signs over.

Built by the signer from decoded bytes and its own policy (names, symbols, decimals), never from
the agent's words: the agent's reason is carried, but only under `agent_reason_unverified`. The
request hash is sha256 of the canonical JSON, so the companion recomputes it from what it received
and a bridge that rewrites anything in flight makes every answer fail verification.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Literal, NotRequired, Required, TypedDict

from policies.decision import Decision
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
from policies.kernel.addresses import to_checksum
from policies.model import USD_DECIMALS, Policy
from policies.units import format_amount

__all__ = [
    "VERSION",
    "ActionCard",
    "ApprovalCard",
    "ApprovalRequestBody",
    "AssetCard",
    "CallCard",
    "ClaimCard",
    "Escalation",
    "EscalationFinding",
    "ForbiddenCard",
    "MainTx",
    "Party",
    "PayoutCard",
    "PolicyCard",
    "RequestBuilder",
    "SessionKeyCard",
    "SimulatedChange",
    "SimulationCard",
    "SwapCard",
    "TransferCard",
    "WrapCard",
    "WrapShown",
    "escalation_json",
    "request_hash",
]

VERSION = 1


# ---- the request's parts, as the companion receives them (the JSON is the contract: these only type it)


class AssetCard(TypedDict, total=False):
    """An amount of a token: in units and symbol when the policy lists it, else in base units only."""

    token: Required[str | None]  # "native", a checksummed address, or None (a claim of an unknown token)
    symbol: Required[str | None]
    amount: Required[str | None]
    amount_base_units: Required[str]
    decimals: int
    price_usd: str  # the policy's own price of one unit
    note: str


class Party(TypedDict):
    address: str
    name: str | None  # from the address book
    label: str


class TransferCard(AssetCard):
    type: Literal["transfer"]
    recipient: Party


class ApprovalCard(AssetCard):
    type: Literal["approval"]
    method: str
    unlimited: bool
    spender: Party


class CallCard(TypedDict):
    type: Literal["call"]
    target: Party
    selector: str
    depth: int
    value: str
    decoded: bool


class SwapCard(TypedDict):
    type: Literal["swap"]
    router: Party
    token_in: AssetCard
    token_out_min: AssetCard
    recipient: Party
    deadline: int
    # what the payer really gives and gets (ETH where the router wraps or unwraps), the venue, the bound
    pays: NotRequired[AssetCard]
    gets_at_least: NotRequired[AssetCard]
    venue: NotRequired[str | None]
    max_slippage_bps: NotRequired[int | None]


class WrapCard(AssetCard):
    type: Literal["wrap", "unwrap"]
    contract: Party


class WrapShown(WrapCard):
    """A wrap as the request carries it: with the other side, in the policy's symbol for the token."""

    becomes: AssetCard


class PayoutCard(TypedDict):
    type: Literal["payout"]
    method: str
    router: Party
    recipient: Party | None


class ClaimCard(AssetCard):
    type: Literal["claim"]
    distributor: Party
    account: Party


class ForbiddenCard(TypedDict):
    type: Literal["forbidden"]
    rule_id: str
    reason: str


ActionCard = (
    TransferCard
    | ApprovalCard
    | CallCard
    | SwapCard
    | WrapCard
    | WrapShown
    | PayoutCard
    | ClaimCard
    | ForbiddenCard
)

# The exact transaction the main key is asked to sign (signer.main_tx); `from` is a keyword, hence this form.
MainTx = TypedDict(
    "MainTx",
    {
        "type": int,
        "chain_id": int,
        "from": str,
        "to": str,
        "value": str,
        "data": str,
        "nonce": int,
        "gas_limit": int,
        "max_fee_per_gas": str,
        "max_priority_fee_per_gas": str,
        "gas_simulated": bool,
    },
)


class EscalationFinding(TypedDict):
    rule_id: str
    reason: str
    outcome: str


class Escalation(TypedDict):
    rule_id: str
    reason: str
    findings: list[EscalationFinding]


class SimulatedChange(TypedDict):
    account: str
    asset: str
    symbol: str | None
    decimals: int | None
    delta: str


class SimulationCard(TypedDict):
    """The node's simulation of a swap, wrap or unwrap (signer.simulate.simulation_card)."""

    source: str
    changes: list[SimulatedChange]


class SessionKeyCard(TypedDict):
    """The session key a top-up funds (signer.topup)."""

    key_id: str
    address: str
    balance_cap: str


class PolicyCard(TypedDict):
    """A policy loosening: over which policy, to which, and what it widens (signer.policy_live)."""

    from_hash: str
    to_hash: str
    widens: list[str]


class ApprovalRequestBody(TypedDict, total=False):
    """The request as stored and hashed; `signer_sig` rides along outside the hash on delivery."""

    v: Required[int]
    request_id: Required[str]
    kind: Required[str]  # sign, topup or policy
    chain_id: Required[int]
    chain: Required[str]
    tx: Required[MainTx | None]
    summary: Required[str]
    actions: Required[list[ActionCard]]
    escalation: Required[Escalation]
    agent_reason_unverified: Required[str | None]
    created_at: Required[float]
    expires_at: Required[float]
    simulation: SimulationCard
    session_key: SessionKeyCard
    policy: PolicyCard
    signer_sig: str


def request_hash(body: Mapping[str, object]) -> str:
    """sha256 of the canonical JSON: any JSON object (the companion hashes what it received)."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def escalation_json(decision: Decision) -> Escalation:
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

    def _asset(self, chain_id: int, asset: str, amount: int) -> AssetCard:
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
        shown: AssetCard = {
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

    def amount(self, chain_id: int, asset: str, amount: int) -> AssetCard:
        """An amount as the companion shows it: units, symbol, and the policy's price when it has one."""
        return self._asset(chain_id, asset, amount)

    def _party(self, chain_id: int, address: str) -> Party:
        name = self.index.address_name(chain_id, address)
        return {"address": to_checksum(address), "name": name, "label": name or "new address"}

    def action(self, action: object) -> ActionCard:
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

    def _with_context(self, decoded: Decoded, action: object) -> ActionCard:
        """An action as `action` words it, and for a swap what the payer really gives and gets: ETH
        when it pays the router in ETH (which wraps it) or has the output unwrapped, the venue's name
        from the policy's `swaps:` list, and the policy's slippage bound."""
        shown = self.action(action)
        if isinstance(action, Wrap):  # the other side of a wrap, in the policy's symbol for the token
            assert shown["type"] == "wrap" or shown["type"] == "unwrap"
            other = NATIVE if action.unwrap else action.contract
            wrap: WrapShown = {**shown, "becomes": self._asset(action.chain_id, other, action.amount)}
            return wrap
        if not isinstance(action, Swap):
            return shown
        assert shown["type"] == "swap"
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
        shown["pays"] = self._asset(
            action.chain_id, NATIVE if pays_eth else action.token_in, action.amount_in
        )
        shown["gets_at_least"] = self._asset(
            action.chain_id, NATIVE if gets_eth else action.token_out, action.amount_out_min
        )
        shown["venue"] = router.name if router is not None else None
        shown["max_slippage_bps"] = rules.max_slippage_bps if rules is not None else None
        return shown

    def build(
        self,
        *,
        request_id: str,
        kind: str,
        decoded: Decoded,
        summary: str,
        decision: Decision,
        agent_reason: str | None,
        tx: MainTx | None,
        created_at: float,
        expires_at: float,
        simulation: SimulationCard | None = None,
    ) -> ApprovalRequestBody:
        chain_id = decoded.call.chain_id
        name = self.index.chain_name(chain_id)
        body: ApprovalRequestBody = {
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
        }
        if simulation is not None:  # the node's simulation of a swap, wrap or unwrap (signer.simulate)
            body["simulation"] = simulation
        return body
