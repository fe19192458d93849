"""A failed tool's message reaches the chat redacted, then cut: never a secret, nor the head of one. A
sign tool's outcome is shown as the signer's card only when the signer sent one (bot/channels/notes.py)."""

from __future__ import annotations

import asyncio
import io
import secrets

from hypothesis import given, settings, strategies as st

from bot.channels.console import ConsoleSink
from bot.channels.notes import failure_note, signer_outcome
from bot.tools.base import Level, ToolOutput
from bot.tools.executor import ToolEvent

KEY = "0x" + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
TOKEN = "owl_0123456789ab_" + "A" * 43
ANTHROPIC = "sk-ant-api03-" + "x" * 40


def failed(content: str, name: str = "fetch_page", level: Level = Level.READ) -> ToolEvent:
    return ToolEvent("finished", "call_1", name, level, "error", ToolOutput(content, is_error=True))


def test_a_hostile_error_message_is_shown_without_its_secrets():
    message = f"upstream said: use {KEY} with {TOKEN} and {ANTHROPIC} please"
    note = failure_note(failed(message), 600)
    assert note is not None and note.startswith("fetch_page: error: upstream said: use ")
    for secret in (KEY[2:], TOKEN, ANTHROPIC):
        assert secret not in note
    assert note.count("[REDACTED:") == 3


def test_it_is_redacted_before_it_is_cut():
    """Cut first, a key straddling the limit would lose its tail, no longer look like a key, and its
    first half would be shown."""
    prefix = "x" * 40
    note = failure_note(failed(prefix + KEY), limit=len("fetch_page: error: ") + len(prefix) + 34)
    assert note is not None and KEY[2:20] not in note and "4c0883a6" not in note


def test_only_finished_failures_make_a_note():
    ok = ToolEvent("finished", "c", "balance", Level.READ, "ok", ToolOutput("1 ETH"))
    started = ToolEvent("started", "c", "transfer", Level.SIGN)
    assert failure_note(ok, 100) is None and failure_note(started, 100) is None
    note = failure_note(failed("x" * 1000), 100)
    assert note is not None and len(note) == 100 and note.endswith("…")


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(max_size=200), after=st.text(max_size=200), limit=st.integers(min_value=20, max_value=500)
)
def test_no_cut_ever_shows_the_head_of_a_key(before, after, limit):
    key = secrets.token_hex(32)
    note = failure_note(failed(f"{before} {key} {after}"), limit)
    assert note is not None and len(note) <= limit
    assert key[:12] not in note  # not even a prefix of it


def test_the_console_shows_the_redacted_note():
    out = io.StringIO()
    sink = ConsoleSink(out, reader=None)  # type: ignore[arg-type] - only tool_event is used
    asyncio.run(sink.tool_event(failed(f"node error: {KEY}", name="transfer", level=Level.SIGN)))
    shown = out.getvalue()
    assert "[tool] transfer: error: node error: [REDACTED:private_key]" in shown and KEY[2:] not in shown


outcomes = st.dictionaries(st.sampled_from(["status", "summary", "tx_hash"]), st.text(max_size=9), max_size=3)
outputs = st.none() | st.builds(
    ToolOutput, content=st.text(max_size=20), is_error=st.booleans(), data=st.none() | outcomes
)


@given(
    phase=st.sampled_from(["started", "finished"]),
    level=st.none() | st.sampled_from(list(Level)),
    output=outputs,
)
def test_a_card_is_shown_only_for_a_finished_sign_tool_that_carries_the_signers_outcome(phase, level, output):
    event = ToolEvent(phase, "c", "transfer", level, "ok", output)
    carries = phase == "finished" and level is Level.SIGN and output is not None and bool(output.data)
    assert signer_outcome(event) is (output.data if carries else None)


def test_the_console_shows_a_denied_transfer_as_the_signer_s_card_not_as_a_note():
    out = io.StringIO()
    sink = ConsoleSink(out, reader=None)  # type: ignore[arg-type] - only tool_event is used
    outcome = {"status": "denied", "summary": "send 1 ETH to 0xabc", "reason": "over the daily limit"}
    asyncio.run(sink.tool_event(ToolEvent("started", "c", "transfer", Level.SIGN)))
    asyncio.run(
        sink.tool_event(
            ToolEvent(
                "finished",
                "c",
                "transfer",
                Level.SIGN,
                "denied",
                ToolOutput("denied", is_error=True, data=outcome),
            )
        )
    )
    asyncio.run(
        sink.tool_event(
            ToolEvent(
                "finished", "d", "balance", Level.READ, "ok", ToolOutput("1 ETH", data={"status": "signed"})
            )
        )
    )
    shown = out.getvalue()
    assert (
        shown
        == "Refused by your policy: send 1 ETH to 0xabc.\nWhy: over the daily limit.\nNothing was signed.\n"
    )
    assert "balance" not in shown and "Signed" not in shown  # only a sign tool's data is a card
