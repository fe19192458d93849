"""The package boundaries, the types and the style hold (docs/architecture.md): `lint-imports`, mypy and ruff, run as in CI.

import-linter reads every import, those inside functions and under TYPE_CHECKING included, so a
lazy import past a boundary fails here like any other. mypy keeps its cache in .mypy_cache, so a
rerun checks only what changed.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from bench import lazy_imports, results as bench_results

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed: run `pip install -e .[dev]` (bash .ci/setup does)"
    return found


def _run(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)


def _project_copy(tmp_path: Path) -> Path:
    """The product packages and pyproject.toml in a scratch directory, for a probe to add an import to."""
    copy = tmp_path / "project"
    for name in ("bot", "signer", "companion_bridge", "skills_runtime", "policies"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def test_import_contracts_are_kept() -> None:
    out = _run([_tool("lint-imports"), "--no-cache"])
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_a_lazy_import_past_a_boundary_breaks_a_contract(tmp_path: Path) -> None:
    """The contracts see a function-level import: the same config on a copy with one added fails."""
    copy = _project_copy(tmp_path)
    with (copy / "bot" / "config.py").open("a") as handle:
        handle.write(
            textwrap.dedent("""

            def _reach_into_the_signer():
                from signer import daemon  # noqa: F401 - the probe: a lazy edge to the signer's core
            """)
        )
    out = _run([_tool("lint-imports"), "--no-cache"], cwd=copy)
    assert out.returncode != 0
    assert "bot.config -> signer.daemon" in out.stdout


def test_tier1_reaching_into_the_engine_or_holding_sql_breaks_a_contract(tmp_path: Path) -> None:
    """Tier 1 names the engine only through signer.tier1.port, and its SQL lives in signer.store:
    a lazy import of the engine from the kill switch, or of sqlite3 into the approvals, fails."""
    copy = _project_copy(tmp_path)
    with (copy / "signer" / "tier1" / "kill_switch.py").open("a") as handle:
        handle.write(
            textwrap.dedent("""

            def _reach_into_the_engine():
                from signer import engine  # noqa: F401 - the probe: Tier 1 past its port
            """)
        )
    with (copy / "signer" / "tier1" / "approvals.py").open("a") as handle:
        handle.write(
            textwrap.dedent("""

            def _query_on_the_side():
                import sqlite3  # noqa: F401 - the probe: SQL outside the store
            """)
        )
    out = _run([_tool("lint-imports"), "--no-cache"], cwd=copy)
    assert out.returncode != 0
    assert "signer.tier1.kill_switch -> signer.engine" in out.stdout
    assert "signer.tier1.approvals -> sqlite3" in out.stdout
    assert "2 broken" in out.stdout


# A string that opens an SQL statement (as the store writes them: keywords in capitals).
_SQL_OPENING = re.compile(
    r"^\s*(SELECT\b|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|REPLACE\s+INTO\b"
    r"|CREATE\s+(TABLE|INDEX|TRIGGER|VIEW|UNIQUE)\b|DROP\s+\w+|ALTER\s+TABLE\b|PRAGMA\b"
    r"|BEGIN(\s+(IMMEDIATE|EXCLUSIVE|DEFERRED))?\s*$|COMMIT\s*$|ROLLBACK\b|SAVEPOINT\b|WITH\s+\w+\s+AS\b)"
)
_QUERY_CALLS = {"execute", "executemany", "executescript"}


def sql_outside_the_store(root: Path) -> list[str]:
    """Where signer code outside signer/store runs a query or holds a statement: a call of
    `execute`, `executemany` or `executescript`, or a string (f-strings too) that opens with SQL.

    The `sql-in-store` import contract keeps sqlite3 out of those modules; this catches a query run
    on a connection the store handed out."""
    found = []
    store = root / "signer" / "store"
    for path in sorted((root / "signer").rglob("*.py")):
        if store in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in _QUERY_CALLS:
                    found.append(f"{where}: .{node.func.attr}(...)")
            elif isinstance(node, ast.JoinedStr) and node.values:
                head = node.values[0]
                if (
                    isinstance(head, ast.Constant)
                    and isinstance(head.value, str)
                    and _SQL_OPENING.match(head.value)
                ):
                    found.append(f"{where}: {head.value[:40]!r}")
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _SQL_OPENING.match(node.value)
            ):
                found.append(f"{where}: {node.value[:40]!r}")
    return found


def test_the_signer_runs_sql_only_in_its_store() -> None:
    assert sql_outside_the_store(ROOT) == []


def test_sql_outside_the_store_is_caught(tmp_path: Path) -> None:
    """sqlite3 imported by a Tier 3 module breaks `sql-in-store`; a query run through the store's
    connection type from the chain module, or an SQL string in a command, is caught by the scan."""
    copy = _project_copy(tmp_path)
    with (copy / "signer" / "tier3" / "grants.py").open("a") as handle:
        handle.write(
            textwrap.dedent("""

            def _query_on_the_side():
                import sqlite3  # noqa: F401 - the probe: SQL outside the store
            """)
        )
    with (copy / "signer" / "chain.py").open("a") as handle:
        handle.write(
            textwrap.dedent("""

            def _count_requests(conn):
                return conn.execute(f"SELECT count(*) FROM {'requests'}").fetchone()
            """)
        )
    with (copy / "signer" / "cli" / "signer_cmd.py").open("a") as handle:
        handle.write('\n_PROBE = "DELETE FROM session_keys"\n')
    out = _run([_tool("lint-imports"), "--no-cache"], cwd=copy)
    assert out.returncode != 0
    assert "signer.tier3.grants -> sqlite3" in out.stdout
    assert "1 broken" in out.stdout
    found = sql_outside_the_store(copy)
    assert {f.split(":")[0] for f in found} == {"signer/chain.py", "signer/cli/signer_cmd.py"}
    assert any(".execute(...)" in f for f in found) and any("DELETE FROM" in f for f in found)


def test_importing_the_composition_root_from_the_bot_breaks_a_contract(tmp_path: Path) -> None:
    """bot.cli.app may import the signer's and the bridge's commands; a bot module importing it
    would reach them through it, and fails (root-alone; the runtime reaching up into the commands
    breaks the bot's layers too)."""
    copy = _project_copy(tmp_path)
    with (copy / "bot" / "runtime" / "launcher.py").open("a") as handle:
        handle.write(
            textwrap.dedent("""

            def _through_the_root():
                from bot.cli import app  # noqa: F401 - the probe: the signer's commands, one step away
            """)
        )
    out = _run([_tool("lint-imports"), "--no-cache"], cwd=copy)
    assert out.returncode != 0
    assert "bot.runtime.launcher -> bot.cli.app" in out.stdout
    assert "Nothing outside bot.cli imports the composition root" in out.stdout.split("Broken contracts")[1]
    assert "bot.runtime is not allowed to import bot.cli" in out.stdout
    assert "2 broken" in out.stdout


def test_a_back_edge_inside_the_bot_breaks_its_layers(tmp_path: Path) -> None:
    """bot's parts are layered (channel -> agent -> tools): the tool executor importing the agent
    loop, lazily, would close the cycle the layers broke, and fails; so does a new part of bot that
    the contract gives no layer (it could close one unseen)."""
    copy = _project_copy(tmp_path)
    with (copy / "bot" / "tools" / "executor.py").open("a") as handle:
        handle.write(
            textwrap.dedent("""

            def _call_up():
                from bot.agent import loop  # noqa: F401 - the probe: tools reaching back into the agent
            """)
        )
    (copy / "bot" / "unplaced").mkdir()
    (copy / "bot" / "unplaced" / "__init__.py").write_text('"""A part with no layer."""\n')
    out = _run([_tool("lint-imports"), "--no-cache"], cwd=copy)
    assert out.returncode != 0
    assert "bot.tools is not allowed to import bot.agent" in out.stdout
    assert "bot.tools.executor -> bot.agent.loop" in out.stdout
    assert "- bot.unplaced" in out.stdout
    assert "1 broken" in out.stdout


def test_mypy_passes_on_the_product_code() -> None:
    out = _run([sys.executable, "-m", "mypy"])
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "Success" in out.stdout


def test_ruff_finds_nothing_to_fix() -> None:
    out = _run([_tool("ruff"), "check", "--no-cache", "."])
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:] + "\n(fix with `ruff check --fix .`)"


def test_the_code_is_formatted_as_ruff_formats_it() -> None:
    out = _run([_tool("ruff"), "format", "--check", "--no-cache", "."])
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:] + "\n(fix with `ruff format .`)"


def test_a_badly_formatted_file_is_caught(tmp_path: Path) -> None:
    copy = _project_copy(tmp_path)
    (copy / "policies" / "probe.py").write_text("x = {  'a':1 }\n")
    out = _run([_tool("ruff"), "format", "--check", "--no-cache", "."], cwd=copy)
    assert out.returncode != 0 and "policies/probe.py" in out.stdout


def _command_line(path: Path) -> bool:
    return "cli" in path.parent.parts or path.name.endswith("cli.py")


def test_imports_inside_functions_stay_rare_outside_the_command_line() -> None:
    """A lazy import hides what a module needs; outside the commands (whose start-up a user feels on
    every `owlia ...`) one stays only where a bench shows its cost (docs/architecture.md). At most 3
    per 1 000 lines, as in httpx (2.4) and llm (2.5)."""
    modules = [
        path
        for package in lazy_imports.PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if not _command_line(path)
    ]
    lines = sum(p.read_text(encoding="utf-8").count("\n") for p in modules)
    lazy = {
        str(p.relative_to(ROOT)): sum(len(site.statements) for site in lazy_imports.sites_in(p, ROOT))
        for p in modules
    }
    density = sum(lazy.values()) * 1000 / lines
    worst = sorted(lazy.items(), key=lambda kv: -kv[1])[:8]
    assert density <= 3.0, f"{density:.2f} imports inside functions per 1 000 lines; most in {worst}"


def _core_distributions() -> set[str]:
    """What every process has: [project].dependencies (the signer's image installs only these)."""
    core = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return {re.split(r"[<>=!;\[ ]", requirement, maxsplit=1)[0].lower() for requirement in core}


def _lazy_import_problems(
    sites: list[lazy_imports.Site], recorded: dict[str, lazy_imports.Cost]
) -> list[str]:
    core = _core_distributions()
    installed = packages_distributions()  # import name -> distributions (yaml -> PyYAML)
    problems = []
    for site in sites:
        where = f"{site.path}:{site.line}"
        if reason := lazy_imports.optional_reason(site):
            packages = {
                name.split(".")[0]
                for stmt in site.statements
                for name in re.findall(r"^(?:from|import) ([\w.]+)", stmt)
            }
            distributions = {d.lower() for p in packages for d in installed.get(p, [p])}
            if distributions & (core | set(lazy_imports.PACKAGES)):
                problems.append(f"{where}: `# optional: {reason}` on a package every process has")
            continue
        figures = lazy_imports.written(site)
        cost = recorded.get(site.key)
        if cost is None:
            problems.append(f"{where}: not measured: run bench/lazy_imports.py --record --mark")
            continue
        if not cost.felt:
            problems.append(
                f"{where}: {cost.mark} is below the bench's thresholds: import at the module's top"
            )
        elif figures != cost.figures:
            problems.append(
                f"{where}: beside it {figures}, measured {cost.mark}: run bench/lazy_imports.py --mark"
            )
    return problems


def test_each_import_inside_a_function_carries_its_measured_cost() -> None:
    """An import stays inside a function only where bench/lazy_imports.py measured what it keeps out of
    every process that loads the module (CPU time or resident memory over the bench's thresholds),
    and that figure is written beside it; or it is a package some installs lack (`# optional: ...`)."""
    recorded = lazy_imports.recorded_costs(bench_results.load())
    problems = _lazy_import_problems(lazy_imports.all_sites(ROOT), recorded)
    assert not problems, "\n".join(problems)


def test_an_unmeasured_or_cheap_lazy_import_is_caught(tmp_path: Path) -> None:
    """The check above can fail: an import with no figure, one whose figure is stale, one too cheap
    to keep inside its function, and an `# optional:` on a package every process has."""
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "probe.py").write_text(
        textwrap.dedent(
            """\
            def none():
                import json

            def stale():
                import jsonschema  # lazy: 30 ms, 900 KiB

            def cheap():
                import os  # lazy: 1 ms, 0 KiB

            def optional():
                import yaml  # optional: not on every platform
            """
        )
    )
    sites = lazy_imports.sites_in(tmp_path / "bot" / "probe.py", tmp_path)
    keys = {site.function: site.key for site in sites}
    recorded = {keys["stale"]: lazy_imports.Cost(31.0, 900), keys["cheap"]: lazy_imports.Cost(1.0, 0)}
    problems = "\n".join(_lazy_import_problems(sites, recorded))
    assert "bot/probe.py:2: not measured" in problems
    assert "bot/probe.py:5: beside it (30, 900), measured # lazy: 31 ms, 900 KiB" in problems
    assert "bot/probe.py:8: # lazy: 1 ms, 0 KiB is below the bench's thresholds" in problems
    assert "bot/probe.py:11: `# optional: not on every platform` on a package every process has" in problems


def test_untyped_json_objects_stay_at_the_boundaries() -> None:
    """`dict[str, Any]` belongs where JSON enters or leaves (a JSON-RPC frame before validation);
    inside, shapes are typed (TypedDicts, dataclasses, models). At most 5 per 1 000 lines overall
    and 6 in the signer."""

    def density(packages: tuple[str, ...]) -> tuple[float, list[tuple[str, int]]]:
        counts, lines = {}, 0
        for package in packages:
            for path in (ROOT / package).rglob("*.py"):
                text = path.read_text(encoding="utf-8")
                lines += text.count("\n")
                if n := text.count("dict[str, Any]"):
                    counts[str(path.relative_to(ROOT))] = n
        return sum(counts.values()) * 1000 / lines, sorted(counts.items(), key=lambda kv: -kv[1])[:6]

    overall, worst = density(("bot", "signer", "policies", "companion_bridge", "skills_runtime"))
    assert overall <= 5.0, f"{overall:.2f} per 1 000 lines; most in {worst}"
    signer, worst = density(("signer",))
    assert signer <= 6.0, f"the signer: {signer:.2f} per 1 000 lines; most in {worst}"
