#!/usr/bin/env python3
"""OwliaBot's service next to its two popular peers, PyPI `nanobot-ai` and npm `openclaw`, like for like,
in one session on this machine.

Each side is its long-running service: `owlia start` (bench/agent_bench.py's stack: Telegram against the
local Bot API server, an anthropic profile, a real signer on anvil, control plane on), `nanobot gateway`
and `openclaw gateway run`, all three answered by the same fake LLM. Measured, interleaved side by side
(A, B, C, A, B, C, ...) so that load on the machine hits every side alike: `--help` wall time; cold start
to ready (OwliaBot and nanobot: first `/health` 200; OpenClaw: its `[gateway] ready`); RSS the same
delay after ready; RSS after N messages, sent through each side's own message path in blocks of 100 taken
in turn; installed packages and sizes (MiB), counted now. Medians; the machine's load is recorded before
every timed phase (and waited out, up to --wait-quiet).

Everything the peers need lives in a scratch directory OUTSIDE the repo ($OWLIA_PEERS_DIR, default
/tmp/owlia-peers); nothing of theirs is ever copied into this repository.

    .venv/bin/python bench/peers/measure_peers.py --setup          # install the peers if missing, measure
    .venv/bin/python bench/peers/measure_peers.py                  # measure (installs must exist)
    .venv/bin/python bench/peers/measure_peers.py --setup-only     # only install
    .venv/bin/python bench/peers/measure_peers.py --quick          # fewer runs, 100 messages (smoke test)
    .venv/bin/python bench/peers/measure_peers.py --only owliabot  # some sides (or: nanobot, openclaw, baseline)

Prints one JSON object on stdout (progress goes to stderr). The OwliaBot side needs the repo's venv; the
peers' side only the standard library. The fake LLM is tests/fakes/llm_server.py, in a thread of this
process, answering every completion instantly with "pong". Every spawned process runs in its own
session/process group and is killed (group + every descendant seen) on exit, timeout or Ctrl-C.

Network: every side talks only to 127.0.0.1 (fake LLM, local Telegram server, its own ports); hosted model
catalogues, update checks, telemetry and mDNS are switched off in the peers' configs/environment.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from fake_llm import FakeLLM
from installs import (
    PEERS_DIR,
    REPO,
    nanobot_cli,
    nanobot_packages,
    node_bin_dir,
    openclaw_cli,
    openclaw_packages,
    owliabot_packages,
    setup_nanobot,
    setup_node,
    setup_openclaw,
)
from machine import QUIET, cpu_busy, machine_info, wait_quiet
from peers import Nanobot, NanobotDriver, OpenClaw, OpenClawDriver, Peer
from procs import (
    _cleanup_all,
    _on_signal,
    idle_rss,
    log,
    stop,
    time_command,
    time_once,
    tree_cpu_s,
    tree_memory,
)
from stats import quiet_subset, summary

sys.path.insert(0, str(REPO))
from bench import results as recorded  # noqa: E402  (the repo's bench/results.py: standard library only)

SIDES = ("owliabot", "nanobot", "openclaw")  # the order every interleaved round takes them in
CHANNELS = {
    "owliabot": "Telegram (against the local Bot API server, tests/fakes/telegram_server.py), plus the control "
    "plane on 127.0.0.1: the configuration issue 24's targets are set for",
    "nanobot": "its websocket channel only (on by default; every other channel off). Its Telegram channel has no "
    "API base setting (only a proxy), so it cannot be pointed at a local Bot API server",
    "openclaw": "no chat channel; its gateway's OpenAI-compatible HTTP endpoint (`gateway.http.endpoints."
    "chatCompletions`)",
}


def make_side(name: str) -> Peer:
    if name == "owliabot":
        from owliabot import OwliaBot  # noqa: PLC0415 - imports the bot: only when it is measured

        return OwliaBot()
    return Nanobot() if name == "nanobot" else OpenClaw()


def interface(peer: Peer) -> str:
    if peer.name == "owliabot":
        from owliabot import TelegramDriver  # noqa: PLC0415

        return TelegramDriver.method
    return NanobotDriver.method if isinstance(peer, Nanobot) else OpenClawDriver.method


def measure_help(sides: list[Peer], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """`<cli> --help` of every side in turn, one warm-up round then `help_runs` rounds."""
    log(f"--help x{args.help_runs}, interleaved")
    quiet = wait_quiet("--help")
    times: dict[str, list[float]] = {p.name: [] for p in sides}
    codes: dict[str, set[int]] = {p.name: set() for p in sides}
    for i in range(args.help_runs + 1):
        for peer in sides:
            dt, rc = time_once([*peer.cli(), "--help"], peer.env(), PEERS_DIR)
            if i:
                times[peer.name].append(dt)
                codes[peer.name].add(rc)
    busy_after = cpu_busy()
    return {
        p.name: {
            "machine_before": quiet,
            "other_cpu_busy_after_all": busy_after,
            **summary(times[p.name]),
            "exit_codes": sorted(codes[p.name]),
            "method": f"`{Path(p.cli()[0]).name} --help`, stdout/stderr to /dev/null, wall time "
            "(perf_counter from just before Popen to a blocking waitpid); one warm-up round, "
            f"then {args.help_runs} rounds taking every side in turn; p90 = nearest rank",
        }
        for p in sides
    }


def measure_starts(sides: list[Peer], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Cold start to ready and idle RSS, `start_runs` rounds taking every side in turn."""
    out: dict[str, dict[str, Any]] = {p.name: {} for p in sides}
    for peer in sides:  # the first start ever creates state (DBs, caches): run once, not counted
        log(f"{peer.name}: warm-up start (not counted)")
        proc, t, _ = peer.start("warmup")
        stop(proc)
        out[peer.name]["warmup_start_s"] = round(t["ready"], 3)
    starts: dict[str, list[float]] = {p.name: [] for p in sides}
    idle: dict[str, list[dict[str, Any]]] = {p.name: [] for p in sides}
    checks: dict[str, list[dict[str, Any]]] = {p.name: [] for p in sides}
    companions: dict[str, dict[str, list[float]]] = {p.name: {} for p in sides}
    for i in range(args.start_runs):
        for peer in sides:
            quiet = wait_quiet(f"{peer.name} start {i + 1}")
            log(f"{peer.name}: cold start {i + 1}/{args.start_runs}")
            proc, t, _ = peer.start(f"start{i}")
            starts[peer.name].append(t["ready"])
            checks[peer.name].append({**{k: round(v, 3) for k, v in t.items()}, "machine_before": quiet})
            time.sleep(args.idle_wait)
            idle[peer.name].append(tree_memory(proc.pid))
            for other, pid in peer.companion_pids().items():
                companions[peer.name].setdefault(other, []).append(tree_memory(pid)["rss_mib"])
            stop(proc)
            checks[peer.name][-1]["other_cpu_busy_after"] = cpu_busy()  # did other work start meanwhile?
    for peer in sides:
        mem = idle[peer.name]
        out[peer.name]["cold_start"] = {
            **summary(starts[peer.name]),
            "checks_per_run": checks[peer.name],
            "method": peer.ready_method
            + (
                f" {args.start_runs} runs after one uncounted warm-up start, taken in turn with the other sides; page "
                "cache warm (no drop_caches); the process is stopped (SIGTERM to its group, then SIGKILL) between "
                "runs."
            ),
        }
        out[peer.name]["idle_memory"] = {
            "rss_mib": summary([m["rss_mib"] for m in mem], 1),
            "pss_mib": summary([m["pss_mib"] for m in mem], 1),
            "main_rss_mib": summary([m["main_rss_mib"] for m in mem], 1),
            "last_run_processes": mem[-1]["processes"] if mem else [],
            "companions_rss_mib": {k: summary(v, 1) for k, v in companions[peer.name].items()},
            "method": f"{args.idle_wait:g} s after ready (the same for every side), VmRSS from /proc/<pid>/status "
            "summed over the spawned process and all its descendants (rss_mib); pss_mib sums Pss from "
            "/proc/<pid>/smaps_rollup over the same processes (shared pages not double-counted); one "
            "sample per cold-start run; MiB. companions_rss_mib: processes the side needs that it "
            "does not spawn (OwliaBot's signer), read at the same moment and NOT included.",
        }
        quiet_subset(out[peer.name], args.quiet_threshold)
    return out


class Load:
    """One side's message run: its process, driver and running tallies."""

    def __init__(self, peer: Peer, llm: FakeLLM, args: argparse.Namespace) -> None:
        self.peer, self.args = peer, args
        self.proc, t, _ = peer.start("load")
        self.ready_s = round(t["ready"], 3)
        time.sleep(args.idle_wait)
        self.rss_before = tree_memory(self.proc.pid)
        self.driver = peer.driver(args.sessions)
        self.lat: list[float] = []
        self.ok = self.failed = self.llm_requests = 0
        self.samples: list[dict[str, Any]] = []
        self.busy_s = self.cpu_s = 0.0
        self.stopped_early: str | None = None

    def block(self, llm: FakeLLM, first: int, last: int) -> None:
        llm_before, t_start, cpu_start = llm.count, time.perf_counter(), tree_cpu_s(self.proc.pid)
        for i in range(first, last):
            t0 = time.perf_counter()
            good = self.driver.send(i % self.args.sessions, f"hello {i}: please reply")
            self.lat.append(time.perf_counter() - t0)
            self.ok += good
            self.failed += not good
            if self.proc.poll() is not None:
                self.stopped_early = f"exited ({self.proc.returncode}) after {i + 1} messages"
                break
        self.busy_s += time.perf_counter() - t_start
        self.cpu_s += tree_cpu_s(self.proc.pid) - cpu_start
        self.llm_requests += llm.count - llm_before
        if self.stopped_early:
            return
        m = tree_memory(self.proc.pid)
        self.samples.append(
            {
                "messages": len(self.lat),
                "rss_mib": m["rss_mib"],
                "pss_mib": m["pss_mib"],
                "median_latency_last_block_s": round(statistics.median(self.lat[first:]), 4),
            }
        )
        log(
            f"{self.peer.name}: {len(self.lat)} msgs, rss {m['rss_mib']} MiB, "
            f"median latency {statistics.median(self.lat) * 1000:.1f} ms"
        )
        if self.busy_s > self.args.load_budget:
            self.stopped_early = (
                f"time budget {self.args.load_budget:g} s exhausted after {len(self.lat)} messages"
            )

    def result(self, series: list[float], quiet: dict[str, Any]) -> dict[str, Any]:
        with contextlib.suppress(Exception):
            self.driver.close()
        after = tree_memory(self.proc.pid) if self.proc.poll() is None else None
        return {
            "machine_before": quiet,
            "start_ready_s": self.ready_s,
            "rss_before": self.rss_before,
            "messages_sent": len(self.lat),
            "answered_ok": self.ok,
            "failed": self.failed,
            "sessions": self.args.sessions,
            "stopped_early": self.stopped_early,
            "busy_s": round(self.busy_s, 1),
            "msgs_per_s": round(len(self.lat) / self.busy_s, 2) if self.busy_s else None,
            "cpu_ms_per_message": round(self.cpu_s * 1000 / len(self.lat), 2) if self.lat else None,
            "first_reply_s": round(self.lat[0], 3) if self.lat else None,
            "latency_s": {k: v for k, v in summary(self.lat, 4).items() if k != "runs"},
            "fake_llm_requests": self.llm_requests,
            "rss_after": after,
            "rss_mib": after["rss_mib"] if after else None,
            "pss_mib": after["pss_mib"] if after else None,
            "rss_settle_series_mib": series,
            "rss_curve": self.samples,
            "interface": interface(self.peer),
        }


def measure_messages(sides: list[Peer], llm: FakeLLM, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Every side started fresh (one after another), then the messages in blocks of 100, every side's
    block in turn, so that machine load drifting over the run hits every side alike."""
    quiet = wait_quiet("message load")
    loads: list[Load] = []
    try:
        for peer in sides:
            log(f"{peer.name}: start for {args.messages} messages")
            loads.append(Load(peer, llm, args))
        # their own background work counts here too, so a side that never idles must not cost 10 minutes
        quiet_all = wait_quiet("every side up and idle, before the messages", max_wait=60)
        for first in range(0, args.messages, 100):
            for load in loads:
                if not load.stopped_early:
                    load.block(llm, first, min(first + 100, args.messages))
        series: dict[str, list[float]] = {ld.peer.name: [] for ld in loads}
        steps = max(1, int(args.idle_wait))
        for _ in range(steps):  # RSS once a second while it settles (a JS heap breathes with GC)
            time.sleep(args.idle_wait / steps)
            for load in loads:
                if load.proc.poll() is None:
                    series[load.peer.name].append(tree_memory(load.proc.pid)["rss_mib"])
        out = {
            ld.peer.name: {**ld.result(series[ld.peer.name], quiet), "machine_before_messages": quiet_all}
            for ld in loads
        }
    finally:
        for load in loads:
            stop(load.proc)
    busy_after = cpu_busy()
    method = (
        f"every side started fresh, one after another, and read {args.idle_wait:g} s after its ready; then "
        f"{args.messages} messages per side, each sent only after the previous one was answered, round-robin "
        f"over {args.sessions} conversations, in blocks of 100 taken by the sides in turn; the fake LLM "
        f"answers every completion at once with 'pong'; memory read {args.idle_wait:g} s after the last "
        "block of the last side (so at least that long after each side's last reply), the same way as idle "
        "memory; MiB. cpu_ms_per_message: user+system CPU of the side's process tree during its own "
        "blocks, over its messages (less noisy than wall time on a shared machine). "
        "machine_before_messages: CPU busy with every side up and idle, i.e. their own background "
        "work included."
    )
    for entry in out.values():
        entry["other_cpu_busy_after"] = busy_after
        entry["method"] = method
    return out


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    """OwliaBot's figure over each peer's, for the doc's table (below 1: OwliaBot smaller/faster)."""

    def pick(name: str, path: tuple[str, ...]) -> float | None:
        node: Any = result.get(name)
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node if isinstance(node, (int, float)) else None

    measures = {
        "help_median_s": ("help", "median"),
        "cold_start_median_s": ("cold_start", "median"),
        "idle_rss_median_mib": ("idle_memory", "rss_mib", "median"),
        "idle_pss_median_mib": ("idle_memory", "pss_mib", "median"),
        "rss_after_messages_mib": ("after_messages", "rss_mib"),
        "pss_after_messages_mib": ("after_messages", "pss_mib"),
        "first_reply_after_start_s": ("after_messages", "first_reply_s"),
        "message_latency_median_s": ("after_messages", "latency_s", "median"),
        "cpu_ms_per_message": ("after_messages", "cpu_ms_per_message"),
    }
    out: dict[str, Any] = {}
    for label, path in measures.items():
        row = {name: pick(name, path) for name in SIDES}
        for peer in ("nanobot", "openclaw"):
            ours, theirs = row["owliabot"], row[peer]
            row[f"owliabot_over_{peer}"] = round(ours / theirs, 3) if ours is not None and theirs else None
        out[label] = row
    return out


def baseline(owlia_python: str, args: argparse.Namespace) -> dict[str, Any]:
    log("baseline")
    node24 = str(node_bin_dir() / "node")
    out: dict[str, Any] = {
        "machine_before": wait_quiet("baseline"),
        "python": owlia_python,
        "python_c_pass_s": time_command(
            [owlia_python, "-c", "pass"], {"PATH": os.environ["PATH"]}, args.help_runs, REPO
        ),
        "python_sleep_idle": idle_rss([owlia_python, "-c", "import time; time.sleep(30)"], 2.0),
        "method": f"`python -c pass` wall time (1 warm-up + {args.help_runs} runs, timed as for --help) with the "
        "OwliaBot venv's python; idle memory = VmRSS/Pss of `python -c 'import time; time.sleep(30)'` 2 s "
        "after spawn.",
    }
    if Path(node24).exists():
        out["node24_e_0_s"] = time_command(
            [node24, "-e", "0"], {"PATH": os.environ["PATH"]}, args.help_runs, REPO
        )
        out["node24_idle"] = idle_rss([node24, "-e", "setTimeout(()=>{},30000)"], 2.0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--setup", action="store_true", help="create the scratch installs if missing, then measure"
    )
    ap.add_argument(
        "--setup-only", action="store_true", help="create the scratch installs if missing and exit"
    )
    ap.add_argument(
        "--only", choices=[*SIDES, "baseline"], action="append", help="measure only these (repeatable)"
    )
    ap.add_argument("--help-runs", type=int, default=20)
    ap.add_argument("--start-runs", type=int, default=7)
    ap.add_argument("--idle-wait", type=float, default=5.0, help="seconds after ready before reading RSS")
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=10, help="conversations the messages are spread over")
    ap.add_argument("--load-budget", type=float, default=2400.0, help="max seconds of messages per side")
    ap.add_argument(
        "--no-counts",
        action="store_true",
        help="skip the installed-package counts (OwliaBot's builds a fresh venv from PyPI, about 1 min)",
    )
    ap.add_argument(
        "--wait-quiet",
        type=float,
        default=600.0,
        help="before each timed phase wait up to this many seconds for other work on the machine "
        "to drop below --quiet-threshold of all CPUs (0 = don't wait; always recorded)",
    )
    ap.add_argument("--quiet-threshold", type=float, default=0.15)
    ap.add_argument(
        "--annotate",
        metavar="RESULTS_JSON",
        help="only re-derive the quiet-run summaries of an existing result file, print it, and exit",
    )
    ap.add_argument("--quick", action="store_true", help="smoke test: 5 help runs, 2 starts, 100 messages")
    ap.add_argument("--python", default=sys.executable, help="interpreter to build the Python venvs with")
    ap.add_argument(
        "--owlia-python",
        default=str(REPO / ".venv" / "bin" / "python"),
        help="python used for the baseline (default: the repo's .venv)",
    )
    recorded.add_arguments(ap)
    args = ap.parse_args()
    if args.annotate:
        data = json.loads(Path(args.annotate).read_text())
        threshold = data.get("settings", {}).get("quiet_threshold", args.quiet_threshold)
        for name in SIDES:
            if isinstance(data.get(name), dict):
                quiet_subset(data[name], threshold)
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.quick:
        args.help_runs, args.start_runs, args.messages = 5, 2, min(args.messages, 100)
    QUIET.update(max_wait=args.wait_quiet, threshold=args.quiet_threshold)
    if not Path(args.owlia_python).exists():
        args.owlia_python = sys.executable

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    PEERS_DIR.mkdir(parents=True, exist_ok=True)
    if REPO in PEERS_DIR.parents or PEERS_DIR == REPO:
        raise SystemExit("OWLIA_PEERS_DIR must be outside the repository")

    want = set(args.only or [*SIDES, "baseline"])
    if args.setup or args.setup_only:
        if "nanobot" in want:
            setup_nanobot(args.python)
        if want & {"openclaw", "baseline"}:
            setup_openclaw() if "openclaw" in want else setup_node()
        if args.setup_only:
            return 0

    result: dict[str, Any] = {
        "machine": machine_info(args.owlia_python),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "peers_dir": str(PEERS_DIR),
        "settings": {
            k: getattr(args, k)
            for k in (
                "help_runs",
                "start_runs",
                "idle_wait",
                "messages",
                "sessions",
                "load_budget",
                "wait_quiet",
                "quiet_threshold",
            )
        },
        "fake_llm": "tests/fakes/llm_server.py FakeLLMServer in a thread of the measuring process, shared by every "
        "side: OpenAI chat completions for nanobot and OpenClaw, Anthropic messages for OwliaBot "
        "(streaming and not), every request answered at once with the text 'pong'",
        "channels": {name: CHANNELS[name] for name in SIDES if name in want},
    }
    llm = FakeLLM()
    sides: list[Peer] = []
    try:
        if "baseline" in want:
            result["baseline"] = baseline(args.owlia_python, args)
        for name in SIDES:
            if name not in want:
                continue
            cli = {"nanobot": nanobot_cli(), "openclaw": openclaw_cli()}.get(name)
            if cli is not None and not cli.exists():
                result[name] = {"error": f"not installed at {cli}; run with --setup"}
                continue
            entry: dict[str, Any] = {}
            result[name] = entry
            try:
                if not args.no_counts:
                    entry["packages"] = {
                        "owliabot": lambda: owliabot_packages(args.python),
                        "nanobot": nanobot_packages,
                        "openclaw": openclaw_packages,
                    }[name]()
                peer = make_side(name)
                sides.append(peer)  # closed on the way out, even if configure() fails half-way
                peer.configure(llm)
            except Exception as e:  # noqa: BLE001 - record it and measure the other sides
                entry["error"] = f"{type(e).__name__}: {e}"
                log(f"{name}: FAILED: {e}")
                if sides and sides[-1].name == name:
                    with contextlib.suppress(Exception):
                        sides.pop().close()
        if sides:
            try:
                for name, part in measure_help(sides, args).items():
                    result[name]["help"] = part
                for name, part in measure_starts(sides, args).items():
                    result[name].update(part)
                if args.messages > 0:
                    for name, part in measure_messages(sides, llm, args).items():
                        result[name]["after_messages"] = part
            except Exception as e:  # noqa: BLE001 - keep what was measured, say what failed
                result["error"] = f"{type(e).__name__}: {e}"
                log(f"FAILED: {e}")
            result["owliabot_over_peers"] = ratios(result)
        result["load_average_at_end"] = list(os.getloadavg())
    finally:
        _cleanup_all()
        for peer in sides:
            with contextlib.suppress(Exception):
                peer.close()
        llm.close()
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    failed = "error" in result or any("error" in result.get(name, {}) for name in SIDES)
    if args.record and not failed:
        recorded.record("peers", result, command=recorded.command_line(args), path=args.results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
