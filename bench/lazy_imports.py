"""What each import inside a function keeps out of its module: CPU time and resident memory.

An import inside a function hides what a module needs, so one stays only where this bench shows
that hoisting it would cost every process that loads the module `THRESHOLD_MS` of CPU or
`THRESHOLD_KIB` of resident memory or more, and both figures are written beside its first line
(`# lazy: 41 ms, 900 KiB`, or `# lazy: 41 ms, 900 KiB (3 imports)` for a run measured together). tests/test_architecture.py checks each such import against the figures
recorded here (docs/architecture.md, "Imports inside functions").

A site is a run of consecutive import statements in one function body. Its cost is measured in a
fresh interpreter that has imported the site's module (so what the module imports at its top is
already loaded, as it would be when the function runs): the CPU time (user + system) and the growth
of the resident set while the site's statements run, medians of `--runs` runs, bytecode compiled
beforehand as in an install. CPU time, not wall time, so a busy machine changes the figure little.
Pydantic's plugins are off first, as in every OwliaBot process (policies/kernel/pydantic_plugins.py).

Run: .venv/bin/python bench/lazy_imports.py [--runs 5] [--record] [--mark]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import results

PACKAGES = ("bot", "signer", "policies", "companion_bridge", "skills_runtime")
THRESHOLD_MS = 5  # below both, an import goes to its module's top: no command and no daemon feels it
THRESHOLD_KIB = 256
# Modules whose imports inside functions are one table of loaders, one per command: `owlia --help`
# lists the commands without importing any. What keeps each loader lazy is the whole table's cost
# (hoisting one would soon mean hoisting all), so each is measured as the table and carries its figure.
TABLES = {"bot.cli.app": "the command table"}
_MARK = re.compile(r"# lazy: (\d+) ms, (\d+) KiB\b")
_OPTIONAL = re.compile(r"# optional: (.+)$", re.MULTILINE)

_MEASURE = """
import importlib, resource, sys, time
from policies.kernel.pydantic_plugins import plugins_off
plugins_off()  # as every OwliaBot process does first (bot.cli.process, signer.serve)
def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()
importlib.import_module(sys.argv[1])
code = compile(sys.argv[2], "<site>", "exec")
before, start = resident(), time.process_time()
exec(code, {})
print(time.process_time() - start, resident() - before)
"""


@dataclass(frozen=True)
class Site:
    """Consecutive import statements inside one function."""

    path: str  # relative to the project root
    module: str
    function: str  # qualified name inside the module
    line: int  # of the first statement
    source: str  # the statements as written, dedented (comments and all)
    statements: tuple[str, ...]  # each statement as `ast.unparse` writes it: no comments, one line

    @property
    def key(self) -> str:
        """Stable across edits elsewhere in the file and across its comments: the module, the
        function and what it imports."""
        return f"{self.module}:{self.function}:{' | '.join(self.statements)}"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _bodies(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield body
    for handler in getattr(node, "handlers", []):
        yield handler.body
    for case in getattr(node, "cases", []):
        yield case.body


def sites_in(path: Path, root: Path = ROOT) -> list[Site]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found: list[Site] = []

    def visit(node: ast.AST, scope: list[str], in_function: bool) -> None:
        for body in _bodies(node):
            run: list[ast.stmt] = []
            for stmt in [*body, None]:
                if in_function and isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    run.append(stmt)
                    continue
                if run:
                    first, last = run[0], run[-1]
                    source = "\n".join(lines[first.lineno - 1 : (last.end_lineno or last.lineno)])
                    found.append(
                        Site(
                            path=str(path.relative_to(root)),
                            module=module_name(path, root),
                            function=".".join(scope),
                            line=first.lineno,
                            source=textwrap.dedent(source),
                            statements=tuple(ast.unparse(stmt) for stmt in run),
                        )
                    )
                    run = []
                if stmt is None:
                    continue
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    inner = in_function or not isinstance(stmt, ast.ClassDef)
                    visit(stmt, [*scope, stmt.name], inner)
                else:
                    visit(stmt, scope, in_function)

    visit(ast.parse(text), [], False)
    return found


def all_sites(root: Path = ROOT) -> list[Site]:
    return [
        site
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if path.name != "__main__.py"
        for site in sites_in(path, root)
    ]


def written(site: Site) -> tuple[int, int] | None:
    """The figures written beside the site (`# lazy: 41 ms, 900 KiB`), if any."""
    found = _MARK.search(site.source)
    return (int(found[1]), int(found[2])) if found else None


def optional_reason(site: Site) -> str | None:
    """`# optional: <why>` beside an import of a package that may be absent on this platform."""
    found = _OPTIONAL.search(site.source)
    return found[1].strip() if found else None


@dataclass(frozen=True)
class Cost:
    """What hoisting a site to its module's top would add to every process that loads the module."""

    cpu_ms: float
    resident_kib: int

    @property
    def felt(self) -> bool:
        return self.cpu_ms >= THRESHOLD_MS or self.resident_kib >= THRESHOLD_KIB

    @property
    def figures(self) -> tuple[int, int]:
        """As written beside the import."""
        return round(self.cpu_ms), self.resident_kib

    @property
    def mark(self) -> str:
        return f"# lazy: {self.figures[0]} ms, {self.figures[1]} KiB"


def measure_all(sites: list[Site], runs: int, env: dict[str, str]) -> dict[str, Cost]:
    """Each site's cost; in a command table, each loader's cost is the whole table's."""
    costs: dict[str, Cost] = {}
    for module, why in TABLES.items():
        loaders = [site for site in sites if site.module == module]
        if loaders:
            table = Site(loaders[0].path, module, why, 0, "\n".join(s.source for s in loaders), ())
            cost = measure(table, runs, env)
            costs.update((loader.key, cost) for loader in loaders)
    for site in sites:
        if site.key not in costs:
            costs[site.key] = measure(site, runs, env)
    return costs


def measure(site: Site, runs: int, env: dict[str, str]) -> Cost:
    """Medians of the CPU time and the resident memory the site's imports add after its module's own."""
    argv = [sys.executable, "-c", _MEASURE, site.module, site.source]
    cpu, resident = [], []
    for i in range(runs + 1):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{site.key}: {proc.stderr.strip().splitlines()[-1:]}")
        if i:  # the first run writes the bytecode
            seconds, grown = proc.stdout.split()
            cpu.append(float(seconds) * 1000)
            resident.append(int(grown) // 1024)
    return Cost(round(statistics.median(cpu), 1), int(statistics.median(resident)))


_MARK_BEFORE_REASON = re.compile(r"# lazy: \d+ ms, \d+ KiB( \(\d+ imports\))?; ")
_MARK_ALONE = re.compile(r"\s*# lazy: \d+ ms, \d+ KiB( \(\d+ imports\))?\s*$")


def write_marks(costs: dict[str, Cost], root: Path = ROOT) -> list[Site]:
    """Write each felt site's figures beside it, replacing the figures written before; return the
    sites that are not felt (they belong at their module's top)."""
    not_felt: list[Site] = []
    by_path: dict[str, list[Site]] = {}
    for site in all_sites(root):
        by_path.setdefault(site.path, []).append(site)
    for path, sites in by_path.items():
        lines = (root / path).read_text(encoding="utf-8").split("\n")
        for site in sites:
            cost = costs.get(site.key)
            if cost is None or optional_reason(site):
                continue
            if not cost.felt:
                not_felt.append(site)
                continue
            span = range(site.line - 1, site.line - 1 + len(site.source.splitlines()))
            for i in span:  # the figures written before, wherever the formatter moved them; reasons kept
                lines[i] = _MARK_ALONE.sub("", _MARK_BEFORE_REASON.sub("# ", lines[i]))
            first = lines[span[0]]
            code, hash_, comment = first.partition("  # ")
            together = f" ({len(site.statements)} imports)" if len(site.statements) > 1 else ""
            lines[span[0]] = f"{code}  {cost.mark}{together}" + (f"; {comment}" if hash_ else "")
        (root / path).write_text("\n".join(lines), encoding="utf-8")
    return not_felt


def recorded_costs(results_file: dict[str, Any]) -> dict[str, Cost]:
    """The costs of the last recorded run, by site key."""
    figures = results_file["lazy_imports"]["current"]["figures"]
    return {key: Cost(ms, figures["resident_kib"][key]) for key, ms in figures["cpu_ms"].items()}


def summary(costs: dict[str, Cost]) -> dict[str, Any]:
    """The counts docs/benchmarks.md shows: how many sites, which kept for what, and the heaviest."""
    felt = [cost for cost in costs.values() if cost.felt]
    return {
        "sites": len(costs),
        "kept_for_cpu": sum(cost.cpu_ms >= THRESHOLD_MS for cost in felt),
        "kept_for_memory_alone": sum(cost.cpu_ms < THRESHOLD_MS for cost in felt),
        "not_felt": sorted(key for key, cost in costs.items() if not cost.felt),
        "median_kept_cpu_ms": statistics.median(cost.cpu_ms for cost in felt) if felt else 0,
        "median_kept_resident_kib": statistics.median(cost.resident_kib for cost in felt) if felt else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per site (median)")
    parser.add_argument("--only", help="measure only the sites whose key contains this text")
    parser.add_argument(
        "--mark", action="store_true", help="write each figure beside its import (# lazy: 41 ms, 900 KiB)"
    )
    parser.add_argument(
        "--recorded",
        action="store_true",
        help="with --mark: write the figures bench/results.json holds, measure nothing",
    )
    results.add_arguments(parser)
    args = parser.parse_args()
    if args.recorded:
        for site in write_marks(recorded_costs(results.load(args.results))):
            print(f"{site.path}:{site.line}: not felt, belongs at the module's top", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        sites = [s for s in all_sites() if not args.only or args.only in s.key]
        costs = measure_all(sites, args.runs, env)
    report = {
        "threshold_ms": THRESHOLD_MS,
        "threshold_kib": THRESHOLD_KIB,
        **summary(costs),
        "cpu_ms": {key: cost.cpu_ms for key, cost in costs.items()},
        "resident_kib": {key: cost.resident_kib for key, cost in costs.items()},
    }
    if args.mark:
        for site in write_marks(costs):
            print(f"{site.path}:{site.line}: not felt, belongs at the module's top", file=sys.stderr)
    if args.only:  # a partial run is printed, never recorded over the whole one
        print(json.dumps(report, indent=2))
        return
    results.emit("lazy_imports", report, args)


if __name__ == "__main__":
    main()
