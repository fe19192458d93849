"""The signer's outcome in the words a person reads: chat cards, notices, and the tool result the
model quotes all come from here, so they say the same thing the same way.

The signer's own summary of the bytes stays verbatim (it is the trusted reading of what is signed);
around it go plain words: what happened, why (the policy's reasons, without rule ids), the dollar
value when the signer priced it, where to approve, and what to do. Request ids, rule ids, key ids,
full hashes and base units are left for `/details` (`details_text`), which shows them on request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SIGNED, PENDING, DENIED, EXPIRED = "signed", "pending_approval", "denied", "expired"
INTERNAL_ID = re.compile(
    r"\s*\((?:request |key |device )?(?:req|sk|dev|grant)_[0-9A-Za-z]{6,}\)"
    r"|\s*\b(?:req|sk|dev|grant)_[0-9A-Za-z]{6,}"
)
LONG_NUMBER = re.compile(r"(?<![0-9A-Za-z.])[0-9]{19,}(?![0-9])")
BASE_UNITS = re.compile(r"\s*\([0-9]+ base units\)")
RAW_AMOUNT_OF = re.compile(r"\b[0-9]+ base units of ")  # a policy's words for an asset without decimals
LEFT = re.compile(r"\bonly ([0-9]+) base units are left\b")  # a Tier 3 lane's on-chain period
RAW_AMOUNT = re.compile(r"\b[0-9]+ base units\b")
PAIR_HINT = (
    "No companion app is paired yet, so nobody can approve it: on the signer's host run "
    "`owlia companion pair`, open the link it prints on your phone, then ask again."
)
SIGNER_DOWN = (
    "The signer is not running, so nothing can be signed or looked up right now. Start it on "
    "the signer's host with `owlia signer serve` (or `owlia up` for the all-in-one setup), then "
    "ask again."
)


@dataclass(frozen=True)
class Companion:
    """Where the user approves: the bridge's `/app/` page when known; `paired` False says how to pair."""

    app_url: str | None = None
    paired: bool | None = None  # None: unknown (the signer did not say)


def companion_of(data: Mapping[str, Any]) -> Companion:
    """The Companion an outcome's data carries (the sign tool put it there)."""
    paired = data.get("companion_paired")
    url = data.get("app_url")
    return Companion(
        app_url=url if isinstance(url, str) else None, paired=paired if isinstance(paired, bool) else None
    )


def card_text(data: Mapping[str, Any]) -> str:
    """The signer's card, as every channel shows it."""
    return outcome_text(data, companion_of(data))


def humane(text: str) -> str:
    """People's words: internal ids, `(N base units)` and 19+ digit numbers taken out of a text."""
    text = BASE_UNITS.sub("", text)
    text = RAW_AMOUNT_OF.sub("an amount (raw, as its decimals are unknown: /details has it) of ", text)
    text = LEFT.sub(
        lambda m: "nothing is left" if m.group(1) == "0" else "less is left than this needs", text
    )
    text = RAW_AMOUNT.sub("a raw amount (/details has it)", text)
    text = INTERNAL_ID.sub("", text)
    return LONG_NUMBER.sub("a number too long to show (/details has it)", text)


def short_hash(tx_hash: str) -> str:
    return f"{tx_hash[:10]}…{tx_hash[-6:]}" if len(tx_hash) > 20 else tx_hash


def dollars(usd_micros: Any) -> str:
    """`" (about $12.34)"` from the signer's micro-dollar value, or "" when it priced nothing."""
    try:
        micros = int(usd_micros)
    except (TypeError, ValueError):
        return ""
    if micros <= 0:
        return ""
    cents = (micros + 5_000) // 10_000
    return f" (about ${cents // 100:,}.{cents % 100:02d})"


def reasons(data: Mapping[str, Any]) -> list[str]:
    """The policy's reasons, in its words, without rule ids."""
    found = data.get("reasons")
    if isinstance(found, Sequence) and not isinstance(found, str) and found:
        return [humane(str(r)) for r in found]
    reason = data.get("reason")
    return [humane(str(reason))] if reason else []


def outcome_text(data: Mapping[str, Any], companion: Companion | None = None) -> str:
    """One outcome as a few short lines: `<what happened>: <signer's summary>`, then why and what next."""
    status = str(data.get("status") or "")
    summary = humane(str(data.get("summary") or "(the signer gave no summary)")).rstrip(". ") + dollars(
        data.get("usd_micros")
    )
    why = reasons(data)
    lines: list[str]
    if status == SIGNED:
        head = "Approved on your companion and signed" if data.get("tier") == 1 else "Signed and sent"
        if data.get("broadcast") is False:
            head = "Signed, not sent (the signer runs with broadcast off)"
        lines = [f"{head}: {summary}."]
        if data.get("tx_hash"):
            lines.append(f"Transaction {short_hash(str(data['tx_hash']))}.")
        if data.get("broadcast_unknown"):
            node = humane(str(data["broadcast_unknown"])).rstrip(". ")
            lines.append(
                f"The node did not confirm it was sent: {node}. "
                "Do not send it again; /details shows the full hash."
            )
    elif status == PENDING:
        lines = [f"Waiting for your approval: {summary}."]
        lines += _why(why)
        lines.append(_where_to_approve(companion or Companion()))
    elif status == DENIED:
        by = data.get("denied_by")
        lines = [f"{'Denied on your companion' if by else 'Refused by your policy'}: {summary}."]
        lines += [] if by else _why(why)
        lines.append("Nothing was signed.")
    elif status == EXPIRED:
        lines = [f"Expired without your approval, nothing was signed: {summary}."]
    else:
        detail = humane(str(data.get("error") or data.get("reason") or ""))
        lines = [f"Not sent ({status.replace('_', ' ') or 'failed'}): {summary}."]
        if detail:
            lines.append(f"What went wrong: {detail.rstrip('. ')}.")
    if data.get("hint"):
        lines.append(humane(str(data["hint"])))
    return "\n".join(lines)


def _why(reasons: list[str]) -> list[str]:
    return ["Why: " + "; ".join(r.rstrip(". ") for r in reasons) + "."] if reasons else []


def _where_to_approve(companion: Companion) -> str:
    if companion.paired is False:
        return PAIR_HINT
    if companion.app_url:
        return f"Approve or deny it in your companion app: {companion.app_url}"
    return "Approve or deny it in your companion app (/approvals lists what is waiting)."


DETAIL_FIELDS = (
    "status",
    "request_id",
    "tx_hash",
    "chain_id",
    "sender",
    "nonce",
    "rule_id",
    "rule_ids",
    "reason",
    "broadcast",
    "broadcast_unknown",
    "error",
    "expires_at",
    "amount_base_units",
)


def details_text(data: Mapping[str, Any]) -> str:
    """Everything the short words leave out, for the user who asks (`/details`)."""
    lines = ["Details of the last signing request:"]
    for key in DETAIL_FIELDS:
        value = data.get(key)
        if value not in (None, "", [], ()):
            shown = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            lines.append(f"- {key.replace('_', ' ')}: {shown}")
    if data.get("summary"):
        lines.append(f"- signer's summary: {data['summary']}")
    return "\n".join(lines)
