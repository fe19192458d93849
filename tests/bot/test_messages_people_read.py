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
