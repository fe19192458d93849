#!/usr/bin/env python3
"""Measure OwliaBot's two popular peers side by side on this machine: PyPI `nanobot-ai` and npm `openclaw`.

Everything the peers need lives in a scratch directory OUTSIDE the repo ($OWLIA_PEERS_DIR, default
/tmp/owlia-peers); nothing of theirs is ever copied into this repository.

    python bench/peers/measure_peers.py --setup            # create the scratch installs if missing, then measure
    python bench/peers/measure_peers.py                    # measure (installs must exist)
    python bench/peers/measure_peers.py --setup-only       # only install
    python bench/peers/measure_peers.py --quick            # fewer runs, 100 messages (smoke test)
    python bench/peers/measure_peers.py --only nanobot     # one peer (or: openclaw, baseline)

Prints one JSON object on stdout (progress goes to stderr). Only the standard library is used; the
fake LLM is tests/fakes/llm_server.py from this repo, run in a thread of this process and answering
every chat completion instantly with "pong". Every spawned peer runs in its own session/process group
and is killed (group + every descendant seen) on exit, timeout or Ctrl-C.

Network: the peers are configured to talk only to 127.0.0.1 (fake LLM, their own ports); hosted model
catalogues, update checks, telemetry and mDNS are switched off in their configs/environment.
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
from installs import (PEERS_DIR, REPO, nanobot_cli, nanobot_packages, node_bin_dir, openclaw_cli, openclaw_packages,
                      setup_nanobot, setup_node, setup_openclaw)
from machine import QUIET, cpu_busy, machine_info, wait_quiet
from peers import Nanobot, NanobotDriver, OpenClaw, OpenClawDriver, Peer
from procs import _cleanup_all, _on_signal, idle_rss, log, stop, time_command, tree_memory
from stats import quiet_subset, summary


def measure_peer(peer: Peer, llm: FakeLLM, args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {}
    peer.configure(llm.openai_url)
    env, home = peer.env(), peer.home()

    log(f"{peer.name}: --help x{args.help_runs}")
    quiet = wait_quiet(f"{peer.name} --help")
    res["help"] = {"machine_before": quiet, **time_command([*peer.cli(), "--help"], env, args.help_runs, home),
                   "method": f"`{Path(peer.cli()[0]).name} --help`, stdout/stderr to /dev/null, wall time "
                             "(perf_counter from just before Popen to a blocking waitpid), 1 warm-up then "
                             f"{args.help_runs} runs; "
                             "p90 = nearest rank"}

    # first start ever creates state (DBs, caches); it is run once and not counted
    log(f"{peer.name}: warm-up start (not counted)")
    proc, t, _ = peer.start("warmup")
    stop(proc)
    res["warmup_start_s"] = round(t["ready"], 3)

    starts, idle, checks = [], [], []
    for i in range(args.start_runs):
        quiet = wait_quiet(f"{peer.name} start {i + 1}")
        log(f"{peer.name}: cold start {i + 1}/{args.start_runs}")
        proc, t, _ = peer.start(f"start{i}")
        starts.append(t["ready"])
        checks.append({**{k: round(v, 3) for k, v in t.items()}, "machine_before": quiet})
        time.sleep(args.idle_wait)
        idle.append(tree_memory(proc.pid))
        stop(proc)
        checks[-1]["other_cpu_busy_after"] = cpu_busy()  # did other work start meanwhile?
    res["cold_start"] = {**summary(starts), "checks_per_run": checks, "method": peer.ready_method + (
        f" {args.start_runs} runs after one uncounted warm-up start; page cache warm (no drop_caches); "
        "the process is stopped (SIGTERM to its group, then SIGKILL) between runs.")}
    res["idle_memory"] = {
        "rss_mb": summary([m["rss_mb"] for m in idle], 1),
        "pss_mb": summary([m["pss_mb"] for m in idle], 1),
        "main_rss_mb": summary([m["main_rss_mb"] for m in idle], 1),
        "last_run_processes": idle[-1]["processes"],
        "method": f"{args.idle_wait:g} s after ready, VmRSS from /proc/<pid>/status summed over the spawned "
                  "process and all descendants (rss_mb); pss_mb sums Pss from /proc/<pid>/smaps_rollup over the "
                  "same processes (shared pages not double-counted); one sample per cold-start run.",
    }

    quiet_subset(res, args.quiet_threshold)
    if args.messages > 0:
        res["after_messages"] = drive_messages(peer, llm, args)
    return res


def drive_messages(peer: Peer, llm: FakeLLM, args: argparse.Namespace) -> dict[str, Any]:
    quiet = wait_quiet(f"{peer.name} load")
    log(f"{peer.name}: {args.messages} messages")
    proc, t, logfile = peer.start("load")
    out: dict[str, Any] = {"machine_before": quiet}
    try:
        time.sleep(args.idle_wait)
        out["rss_before"] = tree_memory(proc.pid)
        llm_before = llm.count
        drv = peer.driver(args.sessions)
        lat, ok, failed = [], 0, 0
        samples = []
        t_start = time.perf_counter()
        stopped_early = None
        try:
            for i in range(args.messages):
                s = i % args.sessions
                t0 = time.perf_counter()
                good = drv.send(s, f"hello {i}: please reply")
                lat.append(time.perf_counter() - t0)
                ok += good
                failed += not good
                if (i + 1) % 100 == 0:
                    m = tree_memory(proc.pid)
                    samples.append({"messages": i + 1, "rss_mb": m["rss_mb"], "pss_mb": m["pss_mb"],
                                    "elapsed_s": round(time.perf_counter() - t_start, 1),
                                    "median_latency_last_100_s": round(statistics.median(lat[-100:]), 3)})
                    log(f"{peer.name}: {i + 1} msgs, rss {m['rss_mb']} MB, "
                        f"median latency {statistics.median(lat) * 1000:.0f} ms")
                if time.perf_counter() - t_start > args.load_budget:
                    stopped_early = f"time budget {args.load_budget:g} s exhausted after {i + 1} messages"
                    break
                if proc.poll() is not None:
                    stopped_early = f"peer exited ({proc.returncode}) after {i + 1} messages"
                    break
        finally:
            with contextlib.suppress(Exception):
                drv.close()
        total = time.perf_counter() - t_start
        series = []  # RSS once a second while it settles (a JS heap breathes with GC)
        for _ in range(max(1, int(args.idle_wait))):
            time.sleep(args.idle_wait / max(1, int(args.idle_wait)))
            if proc.poll() is None:
                series.append(tree_memory(proc.pid)["rss_mb"])
        after = tree_memory(proc.pid) if proc.poll() is None else None
        out.update({
            "messages_sent": len(lat), "answered_ok": ok, "failed": failed,
            "sessions": args.sessions, "stopped_early": stopped_early,
            "total_s": round(total, 1), "msgs_per_s": round(len(lat) / total, 2) if total else None,
            "first_reply_s": round(lat[0], 3) if lat else None,
            "latency_s": {k: v for k, v in summary(lat).items() if k != "runs"},
            "fake_llm_requests": llm.count - llm_before,
            "rss_after": after,
            "rss_mb": after["rss_mb"] if after else None,
            "pss_mb": after["pss_mb"] if after else None,
            "rss_settle_series_mb": series,
            "rss_curve": samples,
            "start_ready_s": round(t["ready"], 3),
            "method": (f"fresh start, {args.idle_wait:g} s idle, then {args.messages} messages sent one at a "
                       f"time (each waits for its reply) round-robin over {args.sessions} conversations, "
                       f"fake LLM answering every completion instantly with 'pong'; memory read "
                       f"{args.idle_wait:g} s after the last reply, same way as idle memory."),
            "interface": (NanobotDriver if isinstance(peer, Nanobot) else OpenClawDriver).method,
        })
    finally:
        stop(proc)
    out["other_cpu_busy_after"] = cpu_busy()
    return out


def baseline(owlia_python: str, args: argparse.Namespace) -> dict[str, Any]:
    log("baseline")
    node24 = str(node_bin_dir() / "node")
    out: dict[str, Any] = {
        "machine_before": wait_quiet("baseline"),
        "python": owlia_python,
        "python_c_pass_s": time_command([owlia_python, "-c", "pass"], {"PATH": os.environ["PATH"]},
                                        args.help_runs, REPO),
        "python_sleep_idle": idle_rss([owlia_python, "-c", "import time; time.sleep(30)"], 2.0),
        "method": f"`python -c pass` wall time (1 warm-up + {args.help_runs} runs, timed as for --help) with the "
                  "OwliaBot venv's python; idle memory = VmRSS/Pss of `python -c 'import time; time.sleep(30)'` 2 s "
                  "after spawn.",
    }
    if Path(node24).exists():
        out["node24_e_0_s"] = time_command([node24, "-e", "0"], {"PATH": os.environ["PATH"]}, args.help_runs, REPO)
        out["node24_idle"] = idle_rss([node24, "-e", "setTimeout(()=>{},30000)"], 2.0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setup", action="store_true", help="create the scratch installs if missing, then measure")
    ap.add_argument("--setup-only", action="store_true", help="create the scratch installs if missing and exit")
    ap.add_argument("--only", choices=["nanobot", "openclaw", "baseline"], action="append",
                    help="measure only these (repeatable)")
    ap.add_argument("--help-runs", type=int, default=20)
    ap.add_argument("--start-runs", type=int, default=7)
    ap.add_argument("--idle-wait", type=float, default=5.0, help="seconds after ready before reading RSS")
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=10, help="conversations the messages are spread over")
    ap.add_argument("--load-budget", type=float, default=2400.0, help="max seconds for the message phase")
    ap.add_argument("--wait-quiet", type=float, default=600.0,
                    help="before each timed phase wait up to this many seconds for other work on the machine "
                         "to drop below --quiet-threshold of all CPUs (0 = don't wait; always recorded)")
    ap.add_argument("--quiet-threshold", type=float, default=0.15)
    ap.add_argument("--annotate", metavar="RESULTS_JSON",
                    help="only re-derive the quiet-run summaries of an existing result file, print it, and exit")
    ap.add_argument("--quick", action="store_true", help="smoke test: 5 help runs, 2 starts, 100 messages")
    ap.add_argument("--python", default=sys.executable, help="interpreter to build nanobot's venv with")
    ap.add_argument("--owlia-python", default=str(REPO / ".venv" / "bin" / "python"),
                    help="python used for the baseline (default: the repo's .venv)")
    args = ap.parse_args()
    if args.annotate:
        data = json.loads(Path(args.annotate).read_text())
        threshold = data.get("settings", {}).get("quiet_threshold", args.quiet_threshold)
        for name in ("nanobot", "openclaw"):
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

    want = set(args.only or ["nanobot", "openclaw", "baseline"])
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
        "settings": {k: getattr(args, k) for k in ("help_runs", "start_runs", "idle_wait", "messages", "sessions",
                                                   "load_budget", "wait_quiet", "quiet_threshold")},
        "fake_llm": "tests/fakes/llm_server.py FakeLLMServer (OpenAI chat completions, streaming and not), every "
                    "request answered at once with the text 'pong'; runs in a thread of the measuring process",
    }
    llm = FakeLLM()
    try:
        if "baseline" in want:
            result["baseline"] = baseline(args.owlia_python, args)
        for name, cls, packages in (("nanobot", Nanobot, nanobot_packages), ("openclaw", OpenClaw, openclaw_packages)):
            if name not in want:
                continue
            cli = nanobot_cli() if name == "nanobot" else openclaw_cli()
            if not cli.exists():
                result[name] = {"error": f"not installed at {cli}; run with --setup"}
                continue
            entry: dict[str, Any] = {"packages": packages()}
            try:
                entry.update(measure_peer(cls(), llm, args))
            except Exception as e:  # noqa: BLE001 - record and go on with the other peer
                entry["error"] = f"{type(e).__name__}: {e}"
                log(f"{name}: FAILED: {e}")
            result[name] = entry
    finally:
        _cleanup_all()
        llm.close()
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
