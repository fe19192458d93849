"""Messages a person reads: no epochs, no library URLs, no tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.runtime.llm_pool import cooling_text

ROOT = Path(__file__).resolve().parents[2]


def test_a_cooldown_is_a_duration_and_a_clock_time_not_an_epoch() -> None:
    text = cooling_text(1_795_608_991.0, now=1_795_608_949.0)
    assert text == "cooling down for 42 s more (until 12:16:31 UTC)"
    assert "1795608991" not in text
    assert cooling_text(1_000_600.0, now=1_000_000.0).startswith("cooling down for 10 min more")


def test_a_bad_intent_names_the_field_without_a_library_url() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot.cli",
            "policy",
            "check",
            "--policy",
            str(ROOT / "policies/defaults/dev.yaml"),
            "--intent",
            '{"chain_id": "x", "to": 5}',
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 1
    assert "bad intent:" in out.stderr and "chain_id" in out.stderr
    assert "http" not in out.stderr and "Traceback" not in out.stderr


def test_a_check_with_only_a_note_is_not_shown_as_a_failure(capsys) -> None:
    from bot.ops.checks import Check, Finding, Severity, run_checks
    from bot.ops.render import print_report

    def note() -> list[Finding]:
        return [Finding("OWL-X-001", Severity.INFO, "a note", "nothing to do")]

    def warning() -> list[Finding]:
        return [Finding("OWL-X-002", Severity.WARNING, "a warning", "do this")]

    report = run_checks(
        "security-audit", [Check("OWL-X-001", "noted", note), Check("OWL-X-002", "warned", warning)]
    )
    print_report(report, as_json=False)
    out = capsys.readouterr().out
    assert "[note] OWL-X-001" in out and "[WARN] OWL-X-002" in out and "[FAIL]" not in out
    assert report.ok and out.strip().splitlines()[-1].startswith("OK:")


def test_help_is_not_aligned_with_spaces_a_proportional_font_breaks() -> None:
    """/help was a two-column table padded with spaces: Telegram's proportional font broke it."""
    from bot.runtime.commands import HELP

    commands = [line for line in HELP.splitlines() if line.startswith("/")]
    assert len(commands) >= 10
    for line in commands:
        assert "  " not in line and " — " in line, line


def test_a_tool_argument_error_describes_the_field_and_never_shows_its_regex() -> None:
    from pydantic import ValidationError

    from bot.tools.executor import _problems
    from bot.tools.signing import TransferArgs

    try:
        TransferArgs.model_validate({"to": "0x12;3", "amount": "1,5"})
    except ValidationError as exc:
        words = _problems(exc, TransferArgs)
    assert "to: is not in the expected form (recipient address (0x + 40 hex), or a name" in words
    assert "amount: is not in the expected form" in words
    assert "pattern" not in words and "^" not in words and "[0-9" not in words


def test_a_waiting_request_links_to_the_companion_app_or_says_how_to_pair() -> None:
    from bot.tools.signer_words import Companion, outcome_text

    data = {
        "status": "pending_approval",
        "summary": "send 0.1 ETH to 0xabc (new address)",
        "request_id": "req_" + "0" * 32,
        "rule_id": "recipient.new",
        "reasons": ["the recipient is not in the address book"],
        "usd_micros": 312_345_678,
    }
    linked = outcome_text(data, Companion(app_url="https://bridge.example/app/", paired=True))
    assert linked == (
        "Waiting for your approval: send 0.1 ETH to 0xabc (new address) (about $312.35).\n"
        "Why: the recipient is not in the address book.\n"
        "Approve or deny it in your companion app: https://bridge.example/app/"
    )
    unpaired = outcome_text(data, Companion(app_url="https://bridge.example/app/", paired=False))
    assert "No companion app is paired yet" in unpaired and "owlia companion pair" in unpaired
    assert "https://bridge.example/app/" not in unpaired  # no app to open: not claimed


def test_people_words_take_out_ids_base_units_and_long_numbers() -> None:
    from bot.tools.signer_words import humane

    text = humane(
        "sent 0.1 ETH (100000000000000000 base units) from the session key sk_b79fb08aacda12f0 "
        "(request req_0661efe41b9f784234cc77df4347c2d7); approve 1157920892373161954235709850086879078532"
        "69984665640564039457584007913129639935 of 0x1111111111111111111111111111111111111111"
    )
    assert text == (
        "sent 0.1 ETH from the session key; approve a number too long to show (/details has it) of "
        "0x1111111111111111111111111111111111111111"
    )
