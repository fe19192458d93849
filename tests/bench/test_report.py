"""docs/benchmarks.md's tables are what bench/results.json makes, and the benches write that file.

On a failure, `.venv/bin/python -m bench.report` rewrites the tables from the results file; figures
are never typed into the doc.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import report, results

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(report.TABLES))
def test_a_table_in_the_doc_is_what_the_results_file_makes(name: str) -> None:
    assert report.current(name) == report.generated(name), "run `.venv/bin/python -m bench.report`"


def test_every_generated_table_is_in_the_doc_once_and_nothing_else_is_marked() -> None:
    assert sorted(report.names_in_doc()) == sorted(report.TABLES)


def test_every_recorded_run_says_where_when_and_what_it_measured() -> None:
    data = results.load()
    assert {table.bench for table in report.TABLES.values()} <= data.keys()
    for bench, entry in data.items():
        assert entry.keys() <= {"current", "baseline"} and "current" in entry, bench
        for role, run in entry.items():
            assert {"figures", "machine", "date", "commit", "command"} <= run.keys(), (bench, role)
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", run["date"]), (bench, role, run["date"])
            assert re.fullmatch(r"[0-9a-f]{7,40}(\+changes)?", run["commit"]), (bench, role, run["commit"])
            assert {"cpu", "cores", "python", "load_average"} <= run["machine"].keys(), (bench, role)
            assert isinstance(run["figures"], dict) and run["figures"], (bench, role)


def test_every_row_finds_its_figure_in_this_codes_run() -> None:
    """A renamed key in a bench's JSON would leave a dash in the doc: caught here instead."""
    data = results.load()
    missing = [
        (name, row.label)
        for name, table in report.TABLES.items()
        for row in table.rows
        for side in table.sides
        if side.role == "current"
        and report.lookup(data[table.bench]["current"]["figures"], row.path.format(key=side.key)) is None
    ]
    assert not missing


def test_a_doc_that_drifted_is_caught_and_rewritten(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    real = report.DOC.read_text()
    table = report.generated("skills")
    figure = re.search(r"\| (\d+\.\d+) ms \|", table)
    assert figure, table
    doc.write_text(real.replace(table, table.replace(figure.group(0), "| 0.001 ms |", 1)))
    assert report.current("skills", doc) != report.generated("skills")
    assert report.rewrite(doc) == ["skills"]
    assert doc.read_text() == real


def test_a_bench_run_with_record_writes_its_figures_and_keeps_the_others(tmp_path: Path) -> None:
    """The real cache bench (2 turns) with `--record` into a copy of the results file."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"other": {"current": {"figures": {"x": 1}}}}))
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "cache_bench.py"),
            "--turns",
            "2",
            "--record",
            "--results",
            str(path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    printed = json.loads(out.stdout)
    written = json.loads(path.read_text())
    assert written["other"] == {"current": {"figures": {"x": 1}}}
    run = written["cache"]["current"]
    assert run["figures"] == printed
    assert run["command"] == "bench/cache_bench.py --turns 2"
    assert run["commit"] == results.commit()
    assert run["machine"]["cores"] >= 1 and len(run["machine"]["load_average"]) == 3


def test_a_baseline_is_recorded_from_another_checkouts_printed_json(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    results.record("skills", {"warm": {"p50_ms": 1.0}}, command="now", path=path)
    before = {"warm": {"p50_ms": 2.0}}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.results",
            "skills",
            "--as",
            "baseline",
            "--commit",
            "abcdef1",
            "--date",
            "2026-12-06 18:00 UTC",
            "--load-average",
            "1.5 1.0 0.5",
            "--results",
            str(path),
        ],
        cwd=ROOT,
        input=json.dumps(before),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    entry = json.loads(path.read_text())["skills"]
    assert entry["current"]["figures"] == {"warm": {"p50_ms": 1.0}}
    assert entry["baseline"]["figures"] == before
    assert entry["baseline"]["commit"] == "abcdef1"
    assert entry["baseline"]["machine"]["load_average"] == [1.5, 1.0, 0.5]
    table = report.render(report.TABLES["skills"], json.loads(path.read_text()))
    assert "| warm call, p50 | 1.00 ms | 2.00 ms | 0.50 | p50 ≤ 5 ms |" in table


def test_numbers_read_as_the_doc_writes_them() -> None:
    assert [report.number(v) for v in (0.909, 46.169, 1207, 202586, 0.0094, 2.0, 0.98)] == [
        "0.909",
        "46.2",
        "1 207",
        "202 586",
        "0.00940",
        "2.00",
        "0.980",
    ]
