"""The benches' figures in one committed, machine-written file: bench/results.json.

Every bench prints one JSON object; with `--record` it also merges that object into bench/results.json
under its own name, with the machine, the date and the commit it ran at. docs/benchmarks.md's tables
are generated from that file (`python -m bench.report`), so the doc holds the figures last recorded
and git holds the history.

Each bench's entry has up to two runs: `current` (this code) and `baseline` (what it is compared
with: the commit before, measured in the same session). A baseline is recorded from the JSON any
checkout's bench prints, so a commit older than `--record` can be measured with its own scripts:

    .venv/bin/python bench/skills_bench.py --record
    ../before/.venv/bin/python ../before/bench/skills_bench.py > /tmp/before.json
    .venv/bin/python -m bench.results skills --as baseline --commit 1234abc < /tmp/before.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results.json"


class Role(str, Enum):
    CURRENT = "current"
    BASELINE = "baseline"


def machine() -> dict[str, Any]:
    """What a figure must be read next to: the CPU, how many, the Python, and how busy the machine was."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def commit(cwd: Path = ROOT) -> str:
    """HEAD's short hash, with `+changes` when tracked files other than the results differ from it."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results.json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return head + ("+changes" if changed else "")


def load(path: Path = RESULTS) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def save(data: dict[str, Any], path: Path = RESULTS) -> None:
    """Sorted and indented, so a new run is reviewed as a small diff."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    tmp.replace(path)


def record(
    bench: str,
    figures: dict[str, Any],
    *,
    command: str,
    role: Role = Role.CURRENT,
    at_commit: str | None = None,
    date: str | None = None,
    load_average: list[float] | None = None,
    path: Path = RESULTS,
) -> dict[str, Any]:
    """Merge one bench's figures into the results file, replacing that bench's run of the same role.

    `date` and `load_average` are for figures recorded after the run (from a saved report): when and
    how busy the machine was while the bench ran, not while it is recorded."""
    here = machine()
    if load_average is not None:
        here["load_average"] = load_average
    run = {
        "figures": figures,
        "machine": here,
        "date": date or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": at_commit or commit(),
        "command": command.strip(),
    }
    data = load(path)
    data.setdefault(bench, {})[role.value] = run
    save(data, path)
    return run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record",
        action="store_true",
        help="also merge the figures into bench/results.json (docs/benchmarks.md is generated from it)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="the results file --record writes")


def command_line(args: argparse.Namespace) -> str:
    """The bench's command as run, less the recording options: what to type to measure again."""
    script = Path(sys.argv[0]).resolve()
    where = script.relative_to(ROOT) if script.is_relative_to(ROOT) else Path(script.name)
    skip = {"--record", "--results", str(getattr(args, "results", RESULTS))}
    return " ".join([str(where), *(a for a in sys.argv[1:] if a not in skip)])


def emit(bench: str, report: dict[str, Any], args: argparse.Namespace) -> None:
    """Print the report, as every bench does; with `--record`, also keep it in bench/results.json."""
    print(json.dumps(report, indent=2))
    if getattr(args, "record", False):
        record(bench, report, command=command_line(args), path=getattr(args, "results", RESULTS))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Record a bench's printed JSON (read from stdin).")
    parser.add_argument("bench", help="the bench's name in bench/results.json (e.g. skills)")
    parser.add_argument("--as", dest="role", type=Role, choices=list(Role), default=Role.CURRENT)
    parser.add_argument("--commit", help="the commit the figures were measured at (default: HEAD here)")
    parser.add_argument("--command", default="", help="the command that printed them")
    parser.add_argument("--date", help="when the bench ran, e.g. '2026-12-06 18:47 UTC' (default: now)")
    parser.add_argument(
        "--load-average", help="the 1, 5 and 15 min load averages while it ran (default: now)"
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    figures = json.load(sys.stdin)
    if not isinstance(figures, dict):
        raise SystemExit("expected one JSON object on stdin, as a bench prints")
    load = [float(x) for x in args.load_average.split()] if args.load_average else None
    record(
        args.bench,
        figures,
        command=args.command,
        role=args.role,
        at_commit=args.commit,
        date=args.date,
        load_average=load,
        path=args.results,
    )


if __name__ == "__main__":
    main()
