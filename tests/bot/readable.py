"""What a person reads must not carry internals: a check the chat and console tests share."""

from __future__ import annotations

import re

RULE_IDS = (
    "recipient.new",
    "recipient.lookalike",
    "limit.per_tx",
    "limit.window",
    "companion.denied",
    "contract.not_allowed",
    "approval.unlimited",
    "simulation.reverted",
)
INTERNAL = re.compile(r"\b(?:req|sk|dev|grant)_[0-9a-f]{6,}")
LONG_NUMBER = re.compile(r"(?<![0-9a-fA-Fx])[0-9]{19,}")
SOCKET = re.compile(r"/[\w./-]*\.sock\b|/run/owlia")


def unreadable(text: str) -> list[str]:
    """The internals found in `text` (empty when a person can read it as it is)."""
    found = [rule for rule in RULE_IDS if rule in text]
    found += INTERNAL.findall(text) + LONG_NUMBER.findall(text) + SOCKET.findall(text)
    if "base units" in text:
        found.append("base units")
    if "[signer]" in text or "Signer: " in text:
        found.append("a second prefix style")
    if re.search(r"^ {9}\S", text, re.M):
        found.append("9-space indentation")
    return found


def assert_readable(*texts: str) -> None:
    for text in texts:
        assert not unreadable(text), (unreadable(text), text)


def full_tx_hash(details: str) -> str:
    """The tx hash `/details` shows in full (the card shows a short one)."""
    return re.search(r"tx hash: (0x[0-9a-f]{64})", details).group(1)
