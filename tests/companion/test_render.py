"""The approval screen: no string in a request can move the terminal's cursor or reorder what is read.

The signer refuses control characters in the agent's reason and in policy names, but the screen is
the last line of defence (a hostile bridge, an older signer), so it writes every hidden character out.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from companion_bridge.companion.render import REASON_CHARS, render_request
from policies.kernel.text import first_hidden

FRIEND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
STRANGER = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"


def request(text: str, kind: str = "sign") -> dict[str, Any]:
    """A request in the signer's shape with `text` in every free-text slot."""
    party = {"address": STRANGER, "name": text, "label": text}
    return {
        "v": 1,
        "request_id": "req_" + "ab" * 16,
        "kind": kind,
        "chain_id": 31337,
        "chain": f"{text} (31337)",
        "tx": {
            "type": 2,
            "chain_id": 31337,
            "from": FRIEND,
            "to": STRANGER,
            "value": "20000000000000000",
            "data": "0x",
            "nonce": 3,
            "gas_limit": 21000,
            "max_fee_per_gas": "2000000000",
            "max_priority_fee_per_gas": "1000000000",
            "gas_simulated": True,
        },
        "summary": text,
        "actions": [
            {
                "type": "transfer",
                "token": "native",
                "symbol": text,
                "amount": text,
                "amount_base_units": "20000000000000000",
                "recipient": party,
            },
            {
                "type": "approval",
                "method": "approve",
                "unlimited": False,
                "token": STRANGER,
                "symbol": text,
                "amount": text,
                "amount_base_units": "5",
                "spender": party,
            },
            {"type": "call", "target": party, "selector": "0xa9059cbb", "depth": 0},
            {"type": "forbidden", "rule_id": "deny.delegatecall", "reason": text},
        ],
        "policy": {"from_hash": "11" * 32, "to_hash": "22" * 32, "widens": [text]},
        "escalation": {"rule_id": "recipient.new", "reason": text, "findings": []},
        "agent_reason_unverified": text,
        "created_at": 1_800_000_000.0,
        "expires_at": 1_800_000_300.0,
    }


def test_an_escape_sequence_in_the_reason_is_written_out() -> None:
    rewrite = f"lunch\r\x1b[9A\x1b[2K    to: {FRIEND} (dev-friend)"
    shown = render_request({**request("plain"), "agent_reason_unverified": rewrite}, now=1_800_000_000.0)
    assert "\x1b" not in shown and "\r" not in shown
    assert "lunch\\r\\x1b[9A\\x1b[2K" in shown
    assert "  to:    0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" in shown  # the decoded recipient stands


@given(st.text(max_size=60), st.sampled_from(["sign", "topup", "policy"]))
def test_no_string_reaches_the_screen_with_a_hidden_character(text: str, kind: str) -> None:
    shown = render_request(request(text, kind), now=1_800_000_000.0)
    assert first_hidden(shown.replace("\n", "")) is None


def test_a_reason_padded_to_the_screen_edge_stays_on_its_own_line() -> None:
    """Spaces (plain or not) up to the terminal's width would wrap the rest into rows of their own."""
    padded = "lunch" + " " * 200 + "Expires in 3600 s." + "\u3000" * 80 + "rule companion.ok"
    shown = render_request(request(padded), now=1_800_000_000.0)
    [line] = [row for row in shown.splitlines() if row.startswith("Agent's stated reason")]
    assert line.endswith("lunch Expires in 3600 s. rule companion.ok")
    assert sum(row.startswith("Expires in") for row in shown.splitlines()) == 1


def test_a_long_reason_is_cut_so_the_decoded_lines_stay_on_the_screen() -> None:
    """Review item 4: a reason of many kilobytes scrolled the decoded transaction off the screen."""
    shown = render_request(request("pay " + "x" * 5000), now=1_800_000_000.0)
    [line] = [row for row in shown.splitlines() if row.startswith("Agent's stated reason")]
    reason = line.split(": ", 1)[1]
    assert len(reason) == REASON_CHARS and reason.endswith("…") and reason.startswith("pay xxx")
    short = render_request(request("x" * REASON_CHARS), now=1_800_000_000.0)
    assert "…" not in short


def test_a_call_the_signer_did_not_decode_says_so() -> None:
    base = request("plain")
    party = base["actions"][2]["target"]
    opaque = {
        "type": "call",
        "target": party,
        "selector": "0x3593564c",
        "depth": 1,
        "value": "0",
        "decoded": False,
    }
    decoded = {**opaque, "selector": "0x82ad56cb", "decoded": True}
    shown = render_request({**base, "actions": [decoded, opaque]}, now=1_800_000_000.0)
    lines = [line for line in shown.splitlines() if "CALL" in line]
    assert len(lines) == 2 and "NOT DECODED" not in lines[0] and "NOT DECODED" in lines[1], lines


def test_every_rule_that_fired_is_shown_not_only_the_first() -> None:
    shown = request("x")
    shown["escalation"] = {
        "rule_id": "recipient.new",
        "reason": "the recipient is not in the address book",
        "findings": [
            {
                "outcome": "escalate",
                "rule_id": "recipient.new",
                "reason": "the recipient is not in the address book",
            },
            {
                "outcome": "escalate",
                "rule_id": "limit.per_tx",
                "reason": "0.02 ETH exceeds the per-transaction limit of 0.01 ETH",
            },
            {"outcome": "allow", "rule_id": "asset.allowed", "reason": "ETH is listed"},
        ],
    }
    screen = render_request(shown, now=1_800_000_000.0)
    assert "every rule that fired" in screen
    assert (
        "[rule recipient.new]" in screen and "[rule limit.per_tx]" in screen and "asset.allowed" not in screen
    )
