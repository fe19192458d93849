"""The three outcomes and the decision record every evaluation produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    """What the policy decides. A StrEnum: its members are the strings on the wire and in the audit log."""

    ALLOW = "allow"  # Tier 2: the signer signs with a session key
    ESCALATE = "escalate"  # Tier 1: the user's companion app must approve
    DENY = "deny"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {Outcome.ALLOW: 0, Outcome.ESCALATE: 1, Outcome.DENY: 2}


def _finding_severity(finding: Finding) -> int:
    return _SEVERITY[finding.outcome]  # `Outcome.severity` without the property call: once per finding


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule's verdict. A decision is the most severe of its findings."""

    outcome: Outcome
    rule_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Spend:
    """What an allowed request will count against the ledger once signed."""

    chain_id: int
    asset: str
    amount: int
    usd_micros: int | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    rule_id: str
    reason: str
    findings: tuple[Finding, ...] = ()
    spends: tuple[Spend, ...] = field(default=())
    new_recipients: tuple[str, ...] = ()

    @classmethod
    def from_findings(
        cls,
        findings: list[Finding],
        spends: tuple[Spend, ...] = (),
        new_recipients: tuple[str, ...] = (),
    ) -> Decision:
        """Most restrictive finding wins; with no finding at all the answer is deny."""
        if not findings:
            return cls(Outcome.DENY, "default.deny", "no rule allows this request", ())
        worst = max(findings, key=_finding_severity)
        return cls(worst.outcome, worst.rule_id, worst.reason, tuple(findings), spends, new_recipients)
