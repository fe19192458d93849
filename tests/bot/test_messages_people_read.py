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
    out = subprocess.run([sys.executable, "-m", "bot.cli", "policy", "check", "--policy",
                          str(ROOT / "policies/defaults/dev.yaml"), "--intent", '{"chain_id": "x", "to": 5}'],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
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

    report = run_checks("security-audit", [Check("OWL-X-001", "noted", note), Check("OWL-X-002", "warned", warning)])
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
