"""Policy changes: a tightening takes effect when the signer loads it; a loosening waits for you.

The signer remembers the last policy text it accepted (meta `policy_text`). At start it compares
the file with it: a change that only tightens is accepted at once; anything that could widen what
the signer signs on its own keeps the old policy in force and opens a Tier 1 request on the
companion. Widening: a higher limit, a limit on an asset that had none (every spend of it needed
you), a new chain, asset, address-book entry, spender, contract or selector, a new or raised
`opaque_calls` entry (a call accepted without being decoded), a new or wider `swaps` section
(a router, a token in or out, a higher slippage, price impact or deadline) or `claims`
distributor, a renamed entry, an
address-book, spender or contract entry removed while unknown recipients are allowed (its
look-alikes were denied and would be signed), a milder rule. Unknown kinds of change count as
widening: the classifier fails closed.
"""

from __future__ import annotations

from typing import Any

from policies.model import NATIVE_DECIMALS, USD_DECIMALS, Policy
from policies.units import parse_units

ACCEPTED = "policy_text"


class StalePolicy(Exception):
    """An approved loosening no longer applies: the policy it was proposed over is gone."""


class EditRefused(Exception):
    """Edits from the phone that are not installed; the message says why, for the owner."""


# Milder to the right: moving right widens.
RULE_ORDER: dict[str, tuple[str, ...]] = {
    "recipients.unknown": ("deny", "escalate", "allow"),
    "recipients.untrusted_provenance": ("deny", "escalate"),
    "sources.skill": ("escalate", "policy"),
    "sources.heartbeat": ("deny", "escalate", "policy"),
    "over_limit": ("deny", "escalate"),
}


def _limits(old: dict[str, Any] | None, new: dict[str, Any] | None, decimals: int, where: str) -> list[str]:
    """per_tx and windows: a limit removed or raised widens; one added or lowered tightens."""
    if old is None:
        return []
    if new is None:
        return [f"{where}: limits removed"]
    out = []
    if old.get("per_tx") is not None and (
        new.get("per_tx") is None
        or parse_units(new["per_tx"], decimals) > parse_units(old["per_tx"], decimals)
    ):
        out.append(f"{where}: per_tx {old['per_tx']} -> {new.get('per_tx')}")
    for label, amount in old.get("windows", {}).items():
        got = new.get("windows", {}).get(label)
        if got is None or parse_units(got, decimals) > parse_units(amount, decimals):
            out.append(f"{where}: {label} window {amount} -> {got}")
    return out


def _asset_limits(old: dict[str, Any], new: dict[str, Any], where: str) -> list[str]:
    """An asset with no limit at all escalates every spend of it, so giving it any limit widens."""
    if old.get("per_tx") is None and not old.get("windows"):
        if new.get("per_tx") is None and not new.get("windows"):
            return []
        return [f"{where}: limits set where there were none (every spend of it needed you before)"]
    return _limits(old, new, new["decimals"], where)


def widenings(old: Policy, new: Policy) -> list[str]:
    """Every way `new` could sign something `old` would not sign on its own; [] = only tighter."""
    o, n = old.model_dump(mode="json"), new.model_dump(mode="json")
    out: list[str] = []
    out += [f"new chain {c['id']}" for c in n["chains"] if c["id"] not in {x["id"] for x in o["chains"]}]
    old_assets = {(a["chain"], a["asset"]): a for a in o["assets"]}
    for a in n["assets"]:
        key = (a["chain"], a["asset"])
        prev = old_assets.get(key)
        where = f"asset {a['symbol']} on {a['chain']}"
        if prev is None:
            out.append(f"new {where}")
        elif (prev["decimals"], prev["symbol"], prev["price_usd"]) != (
            a["decimals"],
            a["symbol"],
            a["price_usd"],
        ):
            out.append(f"{where}: symbol, decimals or price changed")
        else:
            out += _asset_limits(prev, a, where)
    for section in ("address_book", "spenders"):
        old_entries = {(e["chain"], e["address"]): e["name"] for e in o[section]}
        out += [
            f"{section}: {e['name']} {e['address']} added or renamed"
            for e in n[section]
            if old_entries.get((e["chain"], e["address"])) != e["name"]
        ]
    old_contracts = {(c["chain"], c["address"]): (c["name"], set(c["selectors"])) for c in o["contracts"]}
    for c in n["contracts"]:
        prev = old_contracts.get((c["chain"], c["address"]))
        if prev is None or prev[0] != c["name"] or not set(c["selectors"]) <= prev[1]:
            out.append(f"contracts: {c['name']} {c['address']} added, renamed or given new selectors")
    old_opaque = {
        (e["chain"], e["address"], e["selector"]): parse_units(e["max_value"], NATIVE_DECIMALS)
        for e in o.get("opaque_calls", [])
    }
    for e in n.get("opaque_calls", []):
        prev = old_opaque.get((e["chain"], e["address"], e["selector"]))
        if prev is None or parse_units(e["max_value"], NATIVE_DECIMALS) > prev:
            out.append(
                f"opaque_calls: {e['selector']} on {e['address']} added or given a higher max_value "
                "(a call the signer cannot decode would be signed)"
            )
    out += _swaps(o.get("swaps"), n.get("swaps"))
    old_distributors = {tuple(sorted(d.items())) for d in (o.get("claims") or {}).get("distributors", [])}
    out += [
        f"claims: distributor {d['name']} {d['address']} added or changed"
        for d in (n.get("claims") or {}).get("distributors", [])
        if tuple(sorted(d.items())) not in old_distributors
    ]
    if o["usd"] is not None:
        out += _limits(o["usd"], n["usd"], USD_DECIMALS, "usd")
    for path, order in RULE_ORDER.items():
        before, after = _get(o, path), _get(n, path)
        if order.index(after) > order.index(before):
            out.append(f"{path}: {before} -> {after}")
    if n["recipients"]["unknown"] == "allow":  # look-alikes of a removed entry would be signed, not denied
        for section in (
            "address_book",
            "spenders",
            "contracts",
        ):  # every list look-alikes are checked against
            kept = {(e["chain"], e["address"]) for e in n[section]}
            out += [
                f"{section}: {e['name']} {e['address']} removed while unknown recipients are allowed"
                for e in o[section]
                if (e["chain"], e["address"]) not in kept
            ]
    for name, value in n["rate_limits"].items():
        if value > o["rate_limits"][name]:
            out.append(f"rate_limits.{name}: {o['rate_limits'][name]} -> {value}")
    return out


def _swaps(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """A router, token or looser bound the old section did not have widens; removing any tightens."""
    if new is None:
        return []
    if old is None:
        return ["swaps: the agent could swap on its own (a new swaps section)"]
    out = []
    old_routers = {tuple(sorted(r.items())) for r in old["routers"]}
    out += [
        f"swaps: router {r['name']} {r['address']} added or changed"
        for r in new["routers"]
        if tuple(sorted(r.items())) not in old_routers
    ]
    for side in ("tokens_in", "tokens_out"):
        had = {(t["chain"], t["asset"]) for t in old[side]}
        out += [
            f"swaps.{side}: {t['asset']} on {t['chain']} added"
            for t in new[side]
            if (t["chain"], t["asset"]) not in had
        ]
    for knob in ("max_slippage_bps", "max_price_impact_bps", "max_deadline_seconds"):
        if new[knob] > old[knob]:
            out.append(f"swaps.{knob}: {old[knob]} -> {new[knob]}")
    return out


def _get(data: dict[str, Any], path: str) -> str:
    for part in path.split("."):
        data = data[part]
    return data  # type: ignore[return-value]
