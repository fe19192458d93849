"""The prompt a user reads before signing: the full request, from the signer's own decoding.

The transaction fields shown are the ones that will be signed. The agent's stated reason is
shown last and marked UNVERIFIED: it is the one part nobody checked, collapsed to one line and cut
at REASON_CHARS, so it can neither fake rows nor push the decoded ones off the screen. Every string
is shown with its control and invisible characters written out, so no part of the request (a
reason, a name, a symbol) can move the cursor and overwrite the decoded lines above it.
"""

from __future__ import annotations

import time
from typing import Any

from policies.decision import Outcome
from policies.kernel.addresses import to_checksum
from policies.kernel.text import one_line, visible
from policies.units import format_amount
from signer.wire.approval_request import (
    ActionCard,
    ApprovalRequestBody,
    Escalation,
    MainTx,
    Party,
    SimulationCard,
)

RULE = "-" * 64
REASON_CHARS = 500  # the most of the agent's stated reason shown


def _party(p: Party) -> str:
    return f"{p['address']} ({p['label']})"


def _action(a: ActionCard) -> str:
    amount = a.get("amount") or f"{a.get('amount_base_units')} base units of {a.get('token')}"
    if a["type"] == "transfer":
        return (
            f"SEND {amount}\n    base units: {a['amount_base_units']}  token: {a['token']}\n"
            f"    to: {_party(a['recipient'])}"
        )
    if a["type"] == "approval":
        shown = "UNLIMITED" if a["unlimited"] else amount
        return (
            f"APPROVE ({a['method']}) {shown}\n    base units: {a['amount_base_units']}  token: {a['token']}\n"
            f"    spender: {_party(a['spender'])}"
        )
    if a["type"] == "call":
        unseen = (
            "" if a.get("decoded", True) else "  (NOT DECODED: accepted unseen by the policy's opaque_calls)"
        )
        return f"CALL {_party(a['target'])} selector {a['selector']}{unseen}"
    if a["type"] == "swap":
        give, get = a.get("pays") or a["token_in"], a.get("gets_at_least") or a["token_out_min"]
        give_text = give.get("amount") or f"{give['amount_base_units']} base units of {give['token']}"
        get_text = get.get("amount") or f"{get['amount_base_units']} base units of {get['token']}"
        return (
            f"SWAP {give_text} for at least {get_text}\n    via: {_party(a['router'])}\n"
            f"    output to: {_party(a['recipient'])}"
        )
    if a["type"] == "wrap" or a["type"] == "unwrap":
        return f"{a['type'].upper()} {amount} at {_party(a['contract'])}"
    if a["type"] == "claim":
        return f"CLAIM {amount} from {_party(a['distributor'])}\n    paid to: {_party(a['account'])}"
    if a["type"] == "payout":
        to = "the caller" if a["recipient"] is None else _party(a["recipient"])
        return f"ROUTER PAYS OUT ({a['method']}) to {to}"
    return f"FORBIDDEN: {a['reason']} ({a['rule_id']})"


def _simulation_lines(simulation: SimulationCard | None) -> list[str]:
    """The node's simulation, marked as the node's word: it can only have made the request stricter."""
    if not simulation:
        return []
    lines = ["", f"Balance changes simulated by the node ({simulation['source']}; its word, not proof):"]
    for c in simulation["changes"]:
        delta, symbol, decimals = int(c["delta"]), c.get("symbol"), c.get("decimals")
        shown = (
            format_amount(abs(delta), decimals, symbol)
            if symbol and decimals is not None
            else f"{abs(delta)} base units of {c['asset']}"
        )
        lines.append(f"  {to_checksum(c['account'])}: {'-' if delta < 0 else '+'}{shown}")
    return lines


def _tx_lines(tx: MainTx | None) -> list[str]:
    if tx is None:
        return [
            "",
            "No main-account transaction was prepared (no companion paired yet, or the chain was",
            "unreachable): this request can only be denied.",
        ]
    value = int(tx["value"])
    data = tx["data"] if len(tx["data"]) <= 138 else tx["data"][:138] + "..."
    return [
        "",
        "Transaction the main key will sign:",
        f"  from:  {to_checksum(tx['from'])}",
        f"  to:    {to_checksum(tx['to'])}",
        f"  value: {format_amount(value, 18, 'ETH')} ({value} wei)",
        f"  data:  {data} ({(len(tx['data']) - 2) // 2} bytes)",
        f"  nonce: {tx['nonce']}  gas limit: {tx['gas_limit']}  max fee: {tx['max_fee_per_gas']} wei/gas",
    ]


def _visible(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: _visible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible(v) for v in value]
    return value


def why_lines(escalation: Escalation) -> list[str]:
    """Every rule that fired, not just the first: a new recipient may also be over a limit."""
    fired = [f for f in escalation.get("findings") or [] if f.get("outcome") != Outcome.ALLOW]
    if len(fired) <= 1:
        return [f"Why it needs you: {escalation['reason']} [rule {escalation['rule_id']}]"]
    return [
        "Why it needs you (every rule that fired):",
        *(f"  - {f['reason']} [rule {f['rule_id']}]" for f in fired),
    ]


def render_request(request: ApprovalRequestBody, *, now: float | None = None) -> str:
    now = time.time() if now is None else now
    request = _visible(request)
    tx = request.get("tx")
    lines = [
        RULE,
        f"APPROVAL REQUEST {request['request_id']}  ({request['kind']})",
        f"chain: {request['chain']}",
        "",
    ]
    if request["kind"] == "policy":
        change = request["policy"]
        lines += [
            "LOOSEN THE SIGNER POLICY: the signer could then sign more on its own.",
            f"  from policy {change['from_hash'][:16]} to {change['to_hash'][:16]}; what widens:",
        ]
        lines += [f"  - {w}" for w in change["widens"]]
    else:
        lines += ["What this does (decoded by the signer from the bytes):"]
        lines += [f"  - {_action(a)}" for a in request["actions"]] or ["  - nothing"]
        lines += _simulation_lines(request.get("simulation"))
        lines += _tx_lines(tx)
    lines += ["", *why_lines(request["escalation"])]
    # one line (no padding to fake rows), short enough that the lines above stay on the screen
    reason = one_line(request.get("agent_reason_unverified") or "", REASON_CHARS)
    if reason:
        lines += [f"Agent's stated reason (UNVERIFIED, may be wrong or injected): {reason}"]
    left = int(request["expires_at"] - now)
    lines += [f"Expires in {max(left, 0)} s.", RULE]
    return "\n".join(lines)
