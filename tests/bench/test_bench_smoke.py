"""Every benchmark runs green at HEAD: each script runs as a subprocess with tiny counts, exits 0
and prints one JSON object with the keys its docs read. A bench that breaks (a new limit, a moved
import, a renamed field) fails here instead of on the next benchmark round.

The figures are not checked: tiny counts on a shared machine measure nothing. bench/peers is
smoke-run by test_peers_bench_smoke.py for OwliaBot's side and the baseline; the peers themselves
are not run there: installing them needs the registries.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str, timeout: float = 240) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{script} failed:\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout)
    assert isinstance(report, dict)
    return report


def latency(block: dict[str, Any], n: int) -> None:
    assert block["n"] == n
    assert 0 < block["p50_ms"] <= block["p99_ms"]


def test_signer_bench_runs() -> None:
    report = run_bench("signer_bench.py", "--requests", "20", "--clients", "1,2")
    assert {
        "machine",
        "date",
        "policy_evaluation",
        "signing",
        "signer_idle_rss_mb",
        "machine_yardsticks",
        "full_request",
        "status_round_trip",
    } <= report.keys()
    assert report["signer_idle_rss_mb"] > 0
    assert [run["clients"] for run in report["full_request"]] == [1, 2]
    floor = report["machine_yardsticks"]
    assert 0 < floor["epoll_round_trip_p50_us"] < floor["floor_commit_plus_round_trip_us"]
    # a signer that only parses, signs, commits and replies still pays a round trip and an fsync
    assert floor["epoll_round_trip_p50_us"] < floor["minimal_signer_p50_us"]
    assert floor["minimal_signer_per_second"] > 0


def test_bridge_bench_runs_past_the_waiting_cap() -> None:
    # 13 timed + 13 warm-up escalations, then 12 queued: more than one client may have waiting (10),
    # which is what broke it before
    report = run_bench("bridge_bench.py", "--arrivals", "13", "--devices", "2", "--queued", "12")
    latency(report["escalation_to_companion"], 13)
    scale = report["scale"]
    assert scale["queued_requests"] == 2 * 13 + 12  # the arrival bench's (with warm-up) stay open too
    assert scale["all_connect_at_once"]["requests_delivered"] == 2 * scale["queued_requests"]


def test_channel_bench_runs() -> None:
    report = run_bench("channel_bench.py", "-n", "3", "--users", "2", "--rounds", "2")
    latency(report["console"], 3)
    latency(report["telegram"], 3)
    assert report["telegram_throughput"]["messages"] == 4


def test_skills_bench_runs() -> None:
    report = run_bench("skills_bench.py", "-n", "2")
    assert {"cold", "warm", "warm_callback"} <= report.keys()


def test_agent_bench_runs_the_real_service() -> None:
    report = run_bench(
        "agent_bench.py",
        "--service-messages",
        "3",
        "--starts",
        "1",
        "--idle-wait",
        "0",
        "--messages",
        "2",
        "--notes",
        "50",
        "--help-runs",
        "1",
        "--rss-every",
        "1",
    )
    service = report["service"]
    assert "owlia start" in service["measures"]
    assert service["cold_start_to_health_200_s"]["median"] > 0
    assert service["idle_rss_mb"] > 0 and service["rss_after_3_messages_mb"] > 0
    assert len(service["rss_every_1_messages_mb"]) == 3 and min(service["rss_every_1_messages_mb"]) > 0
    growth = service["rss_growth_second_half"]
    assert (growth["from_message"], growth["to_message"]) == (2, 3) and isinstance(growth["mb"], float)
    assert service["first_reply_after_start_s"] > 0
    latency(report["overhead_text_reply"], 2)
    latency(report["overhead_one_tool_round"], 2)
    assert report["memory_search"]["notes"] == 50
    assert "peers" not in report  # committed peer figures are from another machine: never shown as current
    assert report["owlia_help"]["median_s"] > 0 and report["owlia_sign_send"]["median_s"] > 0


def test_cli_bench_runs_paired_against_a_tree() -> None:
    # against this same checkout: the pairing, the ratio and a real signed `owlia sign send` (exit 0)
    report = run_bench("cli_bench.py", "--runs", "2", "--against", str(ROOT))
    for tree in ("this", "against"):
        for name in ("python_pass", "owlia_help", "owlia_sign_send"):
            assert report[tree][name]["n"] == 2 and report[tree][name]["median_s"] > 0
            assert report[tree][name]["cpu_median_s"] > 0
    assert set(report["ratio_this_over_against"]) == {"python_pass", "owlia_help", "owlia_sign_send"}
    assert set(report["cpu_ratio_this_over_against"]) == set(report["ratio_this_over_against"])


def test_mcp_bench_runs() -> None:
    report = run_bench("mcp_bench.py", "-n", "3")
    assert {"skill", "mcp_node", "mcp_python"} <= report.keys()


def test_tier3_bench_runs() -> None:
    report = run_bench("tier3_bench.py", "--requests", "4")
    assert report["tier2_transfer"]["requests"] == report["tier3_transfer"]["requests"] == 4
    assert report["tier3_transfer"]["gas_used_mean"] > 0


def test_swap_bench_runs() -> None:
    report = run_bench("swap_bench.py", "--requests", "3", "--evaluations", "50")
    latency(report["signer_round_trip"]["swap"], 3)
    latency(report["signer_round_trip"]["transfer"], 3)
    assert report["gas_used_mean"]["swap"] > report["gas_used_mean"]["transfer"] == 21_000
    assert report["decode_and_evaluate"]["swap_us"] > 0


def test_webapp_bench_runs() -> None:
    report = run_bench("webapp_bench.py", "-n", "3", "--warmup", "1")
    latency(report["escalation_to_card_visible"], 3)


# bench/results.py and bench/report.py record and show the figures: tests/bench/test_report.py runs them
@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "bench").glob("*_bench.py")))
def test_every_bench_has_a_smoke_test(script: str) -> None:
    assert script in Path(__file__).read_text(), f"bench/{script} has no smoke test here"


def test_cache_bench_runs() -> None:
    report = run_bench("cache_bench.py", "--turns", "3")
    assert {"machine", "date", "turns", "results"} <= report.keys()
    for result in report["results"]:
        assert result["model_requests"] == 3
        assert len(result["billed_uncached_input_per_request"]) == 3
        assert 0 <= result["cached_share_after_first"] <= 1
