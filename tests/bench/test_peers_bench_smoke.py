"""bench/peers/measure_peers.py runs green at HEAD for the parts that need no registry: OwliaBot's side
(the real `owlia start` with Telegram, the signer and the control plane, driven over Telegram) and the
baseline, with tiny counts and a scratch directory of the test's own. nanobot and OpenClaw are not run:
installing them needs PyPI and npm. The figures are not checked (tiny counts on a shared machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def leftover_processes(marker: str) -> list[str]:
    """Command lines of live processes that mention `marker` (the run's scratch directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


def test_measure_peers_runs_owliabot_and_baseline_without_the_peers(tmp_path: Path) -> None:
    scratch = tmp_path / "peers"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "peers" / "measure_peers.py"),
            "--only",
            "owliabot",
            "--only",
            "baseline",
            "--no-counts",
            "--help-runs",
            "1",
            "--start-runs",
            "1",
            "--idle-wait",
            "0.2",
            "--messages",
            "3",
            "--sessions",
            "2",
            "--wait-quiet",
            "0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "OWLIA_PEERS_DIR": str(scratch)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)

    assert {"machine", "date", "settings", "fake_llm", "channels", "baseline", "owliabot"} <= report.keys()
    assert "nanobot" not in report and "openclaw" not in report  # not asked for, never shown from a file
    assert report["machine"]["cores"] and report["date"].startswith("20")
    ours = report["owliabot"]
    assert "owlia --home" in ours["cold_start"]["method"] and "/health" in ours["cold_start"]["method"]
    assert ours["help"]["n"] == 1 and ours["help"]["exit_codes"] == [0]
    assert ours["cold_start"]["n"] == 1 and ours["cold_start"]["median"] > 0
    assert ours["idle_memory"]["rss_mib"]["median"] > 0
    assert ours["idle_memory"]["companions_rss_mib"]["signer"]["median"] > 0  # reported beside, not summed
    load = ours["after_messages"]
    assert (load["messages_sent"], load["answered_ok"], load["failed"]) == (3, 3, 0)
    assert load["fake_llm_requests"] >= 3 and load["rss_mib"] > 0 and load["cpu_ms_per_message"] >= 0
    assert "Telegram" in load["interface"]
    assert report["owliabot_over_peers"]["cold_start_median_s"]["owliabot"] == ours["cold_start"]["median"]
    assert report["owliabot_over_peers"]["cold_start_median_s"]["owliabot_over_nanobot"] is None
    assert report["baseline"]["python_c_pass_s"]["n"] == 1
    assert not leftover_processes(str(scratch)), "the bench left processes running"
