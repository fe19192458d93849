"""`owlia skill` puts each decision on record, as `owlia mcp` does: installed (with the tree hash and
permissions the user was shown), approved again after a change, enabled, disabled, removed. A
refused or failed command writes nothing. The records join the hash-chained skills audit file the
runtime writes to, so when a skill got what it runs with is answered next to what it did with it."""

from __future__ import annotations

import shutil
import stat

from typer.testing import CliRunner

from bot.cli.skill_cmd import app
from bot.observability.audit import skills_audit_path, verify_audit
from skills_runtime.store import SkillStore
from tests.skills.conftest import EXAMPLES, audit_records


def _run(home, *args, answer: str | None = None):
    return CliRunner().invoke(app, list(args), env={"OWLIA_HOME": str(home)}, input=answer)


def test_each_decision_is_on_record_in_the_chained_audit(tmp_path):
    home = tmp_path / "home"
    source = tmp_path / "gas_tracker"
    shutil.copytree(EXAMPLES / "gas_tracker", source)
    assert _run(home, "install", str(source), "--yes").exit_code == 0
    pinned = SkillStore(home).entry("gas_tracker")

    installed = tmp_path / "home" / "skills" / "gas_tracker" / "main.py"
    installed.write_text(installed.read_text() + "\n# changed after install\n")
    done = _run(home, "approve", "gas_tracker", "--yes")
    assert done.exit_code == 0, done.output
    repinned = SkillStore(home).entry("gas_tracker")
    assert repinned["tree_hash"] != pinned["tree_hash"]
    for args in (("disable", "gas_tracker"), ("enable", "gas_tracker"), ("remove", "gas_tracker", "--yes")):
        assert _run(home, *args).exit_code == 0

    records = audit_records(home)
    assert [r["kind"] for r in records] == [
        "skill.installed",
        "skill.approved",
        "skill.disabled",
        "skill.enabled",
        "skill.removed",
    ]
    assert {r["skill"] for r in records} == {"gas_tracker"}
    first, again = records[0], records[1]
    assert (first["tree_hash"], first["permissions"], first["version"]) == (
        pinned["tree_hash"],
        pinned["permissions"],
        pinned["version"],
    )
    assert first["enabled"] is True and first["replaced"] is None
    assert again["tree_hash"] == repinned["tree_hash"]
    assert again["replaced"] == {"version": pinned["version"], "tree_hash": pinned["tree_hash"]}
    path = skills_audit_path(home)
    assert verify_audit(path)[:2] == (True, 5)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_reinstall_names_the_version_it_replaced(tmp_path):
    home = tmp_path / "home"
    assert _run(home, "install", str(EXAMPLES / "gas_tracker"), "--yes").exit_code == 0
    first = SkillStore(home).entry("gas_tracker")
    assert _run(home, "install", str(EXAMPLES / "gas_tracker"), "--yes", "--disabled").exit_code == 0
    last = audit_records(home)[-1]
    assert last["kind"] == "skill.installed" and last["enabled"] is False
    assert last["replaced"] == {"version": first["version"], "tree_hash": first["tree_hash"]}


def test_a_refused_or_failed_command_writes_nothing(tmp_path):
    home = tmp_path / "home"
    refused = _run(home, "install", str(EXAMPLES / "gas_tracker"), answer="n\n")
    assert refused.exit_code != 0 and "not installed" in refused.output
    assert _run(home, "enable", "nope").exit_code == 1
    assert _run(home, "remove", "nope", "--yes").exit_code == 1
    assert audit_records(home) == []
    assert _run(home, "install", str(EXAMPLES / "gas_tracker"), "--yes").exit_code == 0
    assert _run(home, "remove", "gas_tracker", answer="n\n").exit_code != 0
    assert [r["kind"] for r in audit_records(home)] == ["skill.installed"]
