"""docs/benchmarks.md's tables, made from bench/results.json (what the benches recorded with `--record`).

Each table sits between two markers in the doc; `python -m bench.report` rewrites them in place, and
tests/bench/test_report.py fails when the doc holds anything else. The words around the tables (how
each bench measures, what a ratio compares) are written by hand; the figures are never typed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.results import RESULTS, load

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- generated from bench/results.json by bench/report.py: {name} -->"
END = "<!-- end of generated table -->"


@dataclass(frozen=True)
class Row:
    """One measure: where it is in a bench's JSON (`{key}` is the side's key), its unit and target."""

    label: str
    path: str
    unit: str = ""
    target: str = ""
    scale: float = 1.0  # e.g. 1000 to show seconds as ms


@dataclass(frozen=True)
class Side:
    """One column of figures: a run of the bench (`current` or `baseline`) and, for peers, whose."""

    role: str = "current"
    key: str = ""
    header: str = ""  # default: the run's commit
    header_path: str = ""  # or a figure of the run naming it (a paired run's other commit)


@dataclass(frozen=True)
class Table:
    bench: str  # the entry in bench/results.json
    script: str
    rows: tuple[Row, ...]
    sides: tuple[Side, ...] = (Side("current"), Side("baseline"))
    ratios: tuple[tuple[int, int], ...] = ((0, 1),)  # (numerator, denominator) side indexes


def lookup(figures: Any, path: str) -> Any:
    """`a.b.0.c` walks dicts and lists; `clients=1` picks the first list item whose `clients` is 1."""
    here = figures
    for part in path.split("."):
        if isinstance(here, list) and "=" in part:
            name, want = part.split("=", 1)
            here = next((item for item in here if str(item.get(name)) == want), None)
        elif isinstance(here, list) and part.isdigit():
            here = here[int(part)] if int(part) < len(here) else None
        elif isinstance(here, Mapping):
            here = here.get(part)
        else:
            return None
        if here is None:
            return None
    return here


def number(value: float) -> str:
    """Three significant figures below 100, whole numbers above, thousands spaced: 0.909, 46.2, 1 207."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or abs(value) >= 100:
        return f"{round(value):,}".replace(",", " ")
    if value == 0:
        return "0"
    digits = max(0, 2 - int(f"{abs(value):e}".split("e")[1]))
    return f"{value:.{digits}f}"


def cell(value: Any, row: Row) -> str:
    if value is None:
        return "—"
    if isinstance(value, int | float) and not isinstance(value, bool):
        scaled = value * row.scale if row.scale != 1 else value  # a count stays a whole number
        return number(scaled) + (f" {row.unit}" if row.unit else "")
    return str(value) + (f" {row.unit}" if row.unit else "")  # e.g. several runs written as "95, 108"


def ratio(a: Any, b: Any) -> str:
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    if not numeric or not b:
        return "—"
    r = a / b
    return f"{r:.2f}" if abs(r) >= 0.1 else f"{r:.2g}"  # 1.15, 0.33, 0.042: never a bare 0.00


def _load_text(load: Any) -> str:
    if isinstance(load, list):
        return "load average " + " / ".join(number(float(x)) for x in load)
    return f"load average {load}" if load else "load average not recorded"


def describe(run: Mapping[str, Any]) -> str:
    """`abc1234`, 2026-12-06 18:54 UTC, AMD EPYC × 2, Python 3.11.7, load average 2.1 / 3.0 / 2.5."""
    machine = run.get("machine", {})
    parts = [
        f"`{run.get('commit', '?')}`",
        run.get("date", "date not recorded"),
        f"{machine.get('cpu', '?')} × {machine.get('cores', '?')}, Python {machine.get('python', '?')}",
        _load_text(machine.get("load_average")),
    ]
    text = ", ".join(parts)
    if run.get("note"):
        text += f" ({run['note']})"
    return text


def render(table: Table, results: Mapping[str, Any]) -> str:
    entry = results.get(table.bench, {})
    runs = [entry.get(side.role) for side in table.sides]
    if runs[0] is None:
        return f"No figures recorded yet: run `.venv/bin/python {table.script} --record`."
    lines = []
    roles = list(dict.fromkeys(side.role for side in table.sides))
    for role in roles:
        run = entry.get(role)
        name = "This code" if role == "current" else "Baseline"
        if run is None:
            lines.append(f"{name}: not recorded.")
            continue
        lines.append(f"{name}: {describe(run)}; `{run.get('command') or table.script}`.")
    lines.append("")
    headers = ["measure"]
    for side, run in zip(table.sides, runs, strict=True):
        if side.header_path and run is not None:
            named = f"`{lookup(run['figures'], side.header_path)}`"
            headers.append(named + (f" ({side.header})" if side.header else ""))
        elif side.header:
            headers.append(side.header)
        elif run is not None:
            headers.append(f"`{run.get('commit', '?')}`" + (" (baseline)" if side.role == "baseline" else ""))
        else:
            headers.append("baseline")
    headers += [
        "ratio" if len(table.ratios) == 1 else f"{headers[a + 1]} ÷ {headers[b + 1]}" for a, b in table.ratios
    ]
    headers.append("target")
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("|" + " --- |" * len(headers))
    for row in table.rows:
        values = [
            lookup(run["figures"], row.path.format(key=side.key)) if run is not None else None
            for side, run in zip(table.sides, runs, strict=True)
        ]
        cells = [row.label, *(cell(v, row) for v in values)]
        cells += [ratio(values[a], values[b]) for a, b in table.ratios]
        cells.append(row.target)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _p(label: str, block: str, unit: str = "ms", target: str = "", kind: str = "_ms") -> tuple[Row, ...]:
    """p50 and p99 rows of a bench's `percentiles` block."""
    return (
        Row(f"{label}, p50", f"{block}.p50{kind}", unit, target),
        Row(f"{label}, p99", f"{block}.p99{kind}", unit),
    )


PEERS = (
    Side("current", "owliabot", "OwliaBot"),
    Side("current", "nanobot", "nanobot"),
    Side("current", "openclaw", "OpenClaw"),
)

TABLES: dict[str, Table] = {
    "signer": Table(
        "signer",
        "bench/signer_bench.py",
        (
            Row("full Tier 2 request, 1 client, p50", "full_request.clients=1.p50_us", "µs", "≤ 500 µs"),
            Row("full Tier 2 request, 1 client, p99", "full_request.clients=1.p99_us", "µs", "≤ 5 000 µs"),
            Row("signs/s, 1 client", "full_request.clients=1.signs_per_second", "", "≥ 2 000"),
            Row("signs/s, 16 clients", "full_request.clients=16.signs_per_second"),
            Row(
                "signer CPU per request, 1 client (user)",
                "full_request.clients=1.signer_cpu_us_per_request.user",
                "µs",
            ),
            Row(
                "signer CPU per request, 1 client (system)",
                "full_request.clients=1.signer_cpu_us_per_request.system",
                "µs",
            ),
            Row("`status` round trip, p50", "status_round_trip.p50_us", "µs"),
            Row("signer idle RSS", "signer_idle_rss_mb", "MiB", "≤ 50 MiB"),
            Row("policy evaluation alone, p50", "policy_evaluation.evaluate.p50_us", "µs", "≤ 100 µs"),
            Row("decode + evaluate, p50", "policy_evaluation.decode_and_evaluate.p50_us", "µs"),
            Row("our EIP-1559 build + sign, p50", "signing.owlia_sign_eip1559.p50_us", "µs"),
            Row(
                "eth-account `sign_transaction` (the peer we replaced), p50",
                "signing.eth_account_sign_transaction.p50_us",
                "µs",
            ),
            Row("state head bind, the epoch known, p50", "state_head.bind_epoch_known.p50_us", "µs"),
            Row("state head bind, the epoch read first, p50", "state_head.bind_epoch_read.p50_us", "µs"),
        ),
    ),
    "signer_yardsticks": Table(
        "signer",
        "bench/signer_bench.py",
        (
            Row(
                "a minimal signer (parse, one signature, a one-row durable commit, reply), p50",
                "machine_yardsticks.minimal_signer_p50_us",
                "µs",
            ),
            Row("a minimal signer, per second", "machine_yardsticks.minimal_signer_per_second"),
            Row(
                "a durable one-row SQLite commit (WAL, FULL), p50",
                "machine_yardsticks.sqlite_wal_full_commit_p50_us",
                "µs",
            ),
            Row("an fdatasync of 4 KiB, p50", "machine_yardsticks.fdatasync_4k_p50_us", "µs"),
            Row(
                "an epoll round trip between two processes, p50",
                "machine_yardsticks.epoll_round_trip_p50_us",
                "µs",
            ),
            Row("`sum(range(10**6))`", "machine_yardsticks.python_sum_range_1e6_ms", "ms"),
        ),
    ),
    "startup": Table(
        "agent",
        "bench/agent_bench.py",
        (
            Row(
                "`owlia start` to the first `/health` 200, median",
                "service.cold_start_to_health_200_s.median",
                "s",
                "≤ 0.4 s",
            ),
            Row("CPU spent by then, median", "service.cold_start_cpu_s.median", "s"),
            Row("idle RSS, 5 s after ready", "service.idle_rss_mb", "MiB", "≤ 70 MiB"),
            Row("`owlia --help`, median", "owlia_help.median_s", "s", "≤ 0.1 s"),
            Row("`owlia sign send` (signed, exit 0), median", "owlia_sign_send.median_s", "s", "≤ 0.2 s"),
        ),
    ),
    "agent": Table(
        "agent",
        "bench/agent_bench.py",
        (
            Row("first reply after start", "service.first_reply_after_start_s", "s", "≤ 0.3 s"),
            Row("RSS after 1 000 messages", "service.rss_after_1000_messages_mb", "MiB", "≤ 100 MiB"),
            Row(
                "RSS growth over the second half of the run",
                "service.rss_growth_second_half.mb",
                "MiB",
                "flat",
            ),
            *_p("Telegram message round trip", "service.telegram_reply"),
            *_p("in process: message to reply, text answer", "overhead_text_reply", target="p50 ≤ 20 ms"),
            *_p("in process: message to reply with one read-tool round", "overhead_one_tool_round"),
            Row("memory search over 10 000 notes, p50", "memory_search.p50_ms", "ms", "≤ 10 ms"),
        ),
    ),
    "cli": Table(
        "cli",
        "bench/cli_bench.py",
        (
            Row("`python -c pass` (the floor), median", "{key}.python_pass.median_s", "ms", scale=1000),
            Row("`owlia --help`, median", "{key}.owlia_help.median_s", "ms", "≤ 100 ms", 1000),
            Row("`owlia --help`, CPU, median", "{key}.owlia_help.cpu_median_s", "ms", scale=1000),
            Row(
                "`owlia sign send` (signed, exit 0), median",
                "{key}.owlia_sign_send.median_s",
                "ms",
                "≤ 200 ms",
                1000,
            ),
            Row(
                "`owlia sign send`, CPU of the command, median",
                "{key}.owlia_sign_send.cpu_median_s",
                "ms",
                scale=1000,
            ),
        ),
        sides=(
            Side("current", "this", header_path="commits.this"),
            Side("current", "against", "paired", "commits.against"),
        ),
    ),
    "peers": Table(
        "peers",
        "bench/peers/measure_peers.py",
        (
            Row("`--help`, median", "owliabot_over_peers.help_median_s.{key}", "s"),
            Row("cold start to ready, median", "owliabot_over_peers.cold_start_median_s.{key}", "s"),
            Row("idle RSS, 5 s after ready", "owliabot_over_peers.idle_rss_median_mib.{key}", "MiB"),
            Row("idle PSS, 5 s after ready", "owliabot_over_peers.idle_pss_median_mib.{key}", "MiB"),
            Row("RSS after the messages", "owliabot_over_peers.rss_after_messages_mib.{key}", "MiB"),
            Row("first reply after start", "owliabot_over_peers.first_reply_after_start_s.{key}", "s"),
            Row(
                "message round trip, median",
                "owliabot_over_peers.message_latency_median_s.{key}",
                "ms",
                scale=1000,
            ),
            Row(
                "CPU per message (the service's process tree)",
                "owliabot_over_peers.cpu_ms_per_message.{key}",
                "ms",
            ),
        ),
        sides=PEERS,
        ratios=((0, 1), (0, 2)),
    ),
    "bridge": Table(
        "bridge",
        "bench/bridge_bench.py",
        (
            *_p(
                "escalation to the request on the connected companion",
                "escalation_to_companion",
                target="p50 ≤ 50 ms",
            ),
            Row(
                "100 paired devices: bridge RSS holding the queue", "scale.bridge_rss_mb_holding_queue", "MiB"
            ),
            Row("bridge RSS after delivering it", "scale.bridge_rss_mb_after_delivery", "MiB"),
            Row(
                "all devices reconnect at once: first request, p50",
                "scale.all_connect_at_once.first_request.p50_ms",
                "ms",
            ),
            Row("every backlog delivered", "scale.all_connect_at_once.all_backlogs_delivered_s", "s"),
            Row("requests delivered", "scale.all_connect_at_once.requests_delivered"),
            Row("bridge CPU for the reconnect", "scale.all_connect_at_once.bridge_cpu_s", "s"),
        ),
    ),
    "webapp": Table(
        "webapp",
        "bench/webapp_bench.py",
        _p(
            "escalation to the approval card visible in Chromium",
            "escalation_to_card_visible",
            target="p50 ≤ 100 ms",
        ),
    ),
    "channel": Table(
        "channel",
        "bench/channel_bench.py",
        (
            Row(
                "added by Telegram over the console, paired p50",
                "telegram_added_ms.paired_p50",
                "ms",
                "≤ 10 ms",
            ),
            Row("added by Telegram over the console, paired p95", "telegram_added_ms.paired_p95", "ms"),
            Row("console, p50", "console.p50_ms", "ms"),
            Row("Telegram, p50", "telegram.p50_ms", "ms"),
            Row("throughput, 4 users", "telegram_throughput.messages_per_s", "msg/s"),
        ),
    ),
    "skills": Table(
        "skills",
        "bench/skills_bench.py",
        (
            *_p("cold call (start the sandbox, `initialize`, the call)", "cold", target="p50 ≤ 150 ms"),
            *_p("warm call", "warm", target="p50 ≤ 5 ms"),
            *_p("warm call with one `core.chain` callback", "warm_callback"),
        ),
    ),
    "mcp": Table(
        "mcp",
        "bench/mcp_bench.py",
        (
            Row("warm call, a skill's `echo`, p50", "skill.p50_ms", "ms"),
            Row("warm call, server-everything's `echo` (Node), p50", "mcp_node.p50_ms", "ms"),
            Row("warm call, mcp-server-time's `get_current_time` (Python), p50", "mcp_python.p50_ms", "ms"),
            Row("Node server's p50 over the skill's", "ratio_p50.mcp_node", "", "≤ 2"),
            Row("Python server's p50 over the skill's", "ratio_p50.mcp_python", "", "≤ 2"),
        ),
    ),
    "cache": Table(
        "cache",
        "bench/cache_bench.py",
        (
            Row(
                "Anthropic: share of input served from the cache after turn 1",
                "results.provider=anthropic.cached_share_after_first",
                "",
                "≥ 0.85",
            ),
            Row(
                "Anthropic: uncached input billed per request",
                "results.provider=anthropic.billed_uncached_input_mean_after_first",
                "tokens",
            ),
            Row(
                "OpenAI: share of input served from the cache after turn 1",
                "results.provider=openai.cached_share_after_first",
                "",
                "≥ 0.85",
            ),
            Row(
                "OpenAI: uncached input billed per request",
                "results.provider=openai.billed_uncached_input_mean_after_first",
                "tokens",
            ),
        ),
    ),
    "tier3": Table(
        "tier3",
        "bench/tier3_bench.py",
        (
            Row("Tier 2 transfer: signer round trip, p50", "tier2_transfer.signer_ms_p50", "ms"),
            Row("Tier 3 transfer: signer round trip, p50", "tier3_transfer.signer_ms_p50", "ms"),
            Row("Tier 2 transfer: gas", "tier2_transfer.gas_used_mean", "gas"),
            Row("Tier 3 transfer: gas, a grant's first redeem", "tier3_transfer.gas_used_first", "gas"),
            Row("Tier 3 transfer: gas, every later redeem", "tier3_transfer.gas_used_mean", "gas"),
            Row("the main key's `incrementNonce` (ends every grant)", "revoke_all_gas", "gas"),
        ),
    ),
    "swap": Table(
        "swap",
        "bench/swap_bench.py",
        (
            Row("transfer: signer round trip, p50", "signer_round_trip.transfer.p50_ms", "ms"),
            Row("swap: signer round trip, p50", "signer_round_trip.swap.p50_ms", "ms"),
            Row("transfer: decode + evaluate alone", "decode_and_evaluate.transfer_us", "µs"),
            Row("swap: decode + evaluate alone", "decode_and_evaluate.swap_us", "µs"),
            Row("transfer: gas", "gas_used_mean.transfer", "gas"),
            Row("swap (`exactInputSingle`): gas", "gas_used_mean.swap", "gas"),
            Row(
                "Tier 3 swap (swap lane): signer round trip, p50", "tier3_swap.signer_round_trip.p50_ms", "ms"
            ),
            Row("Tier 3 swap: gas, a grant's first redeem", "tier3_swap.gas_used_first", "gas"),
            Row("Tier 3 swap: gas, every later redeem", "tier3_swap.gas_used_mean", "gas"),
        ),
    ),
    "lazy_imports": Table(
        "lazy_imports",
        "bench/lazy_imports.py",
        (
            Row("runs of imports inside a function, measured", "sites"),
            Row("kept inside: 5 ms of CPU or more", "kept_for_cpu"),
            Row("kept inside: under 5 ms, 256 KiB of memory or more", "kept_for_memory_alone"),
            Row("what a kept one keeps out of its module, CPU, median", "median_kept_cpu_ms", "ms"),
            Row("what a kept one keeps out of its module, memory, median", "median_kept_resident_kib", "KiB"),
        ),
        sides=(Side("current"),),
        ratios=(),
    ),
    "compose": Table(
        "compose",
        "tests/ops/test_compose_stack.py",
        (
            Row("`owliabot/signer` image", "images_mb.signer", "MB"),
            Row("`owliabot/bridge` image", "images_mb.bridge", "MB"),
            Row("`owliabot/bot` image", "images_mb.bot", "MB"),
            Row("`owliabot/anvil` image", "images_mb.anvil", "MB"),
            Row(
                "`.ci/docker-engine prepare` from an empty state, in the background",
                "prepare_from_empty_s",
                "s",
            ),
            Row("the test file after `prepare`", "test_after_prepare_s", "s"),
            Row("the test file alone, warm", "test_warm_s", "s"),
            Row("`CI=true bash .ci/run` from a clean clone, all of it", "ci_run_s", "s"),
        ),
        sides=(Side("current"),),
        ratios=(),
    ),
}


def generated(name: str, results: Mapping[str, Any] | None = None) -> str:
    return render(TABLES[name], load() if results is None else results)


def _block(text: str, name: str) -> tuple[int, int]:
    marker = BEGIN.format(name=name)
    if marker not in text:
        raise KeyError(f"docs/benchmarks.md has no {marker!r}")
    start = text.index("\n", text.index(marker)) + 1
    return start, text.index(END, start)


def current(name: str, doc: Path = DOC) -> str:
    text = doc.read_text()
    start, end = _block(text, name)
    return text[start:end].strip()


def rewrite(doc: Path = DOC, results_path: Path = RESULTS) -> list[str]:
    """Put every generated table in the doc; the names of those that changed."""
    results = load(results_path)
    text = doc.read_text()
    changed = []
    for name in TABLES:
        start, end = _block(text, name)
        table = generated(name, results)
        if text[start:end].strip() != table:
            text = text[:start] + table + "\n" + text[end:]
            changed.append(name)
    doc.write_text(text)
    return changed


def names_in_doc(doc: Path = DOC) -> list[str]:
    pattern = re.escape(BEGIN).replace(re.escape("{name}"), r"([a-z0-9_]+)")
    return re.findall(pattern, doc.read_text())


def main() -> None:
    changed = rewrite()
    print(
        "rewrote: " + ", ".join(changed) if changed else "docs/benchmarks.md is up to date", file=sys.stderr
    )


if __name__ == "__main__":
    main()
