"""The docs' tables match the code (tests/docs_tables.py): the generated ones exactly, the written ones
in what they name. On a failure, `.venv/bin/python -m tests.docs_tables` rewrites the generated
tables; a written one needs its words added by hand."""

from __future__ import annotations

import re

import pytest

from tests import docs_tables
from tests.docs_tables import ROOT


@pytest.mark.parametrize("name", sorted(docs_tables.GENERATED))
def test_a_generated_table_is_what_the_code_makes(name):
    _, make = docs_tables.GENERATED[name]
    assert docs_tables.current(name) == make(), f"run `.venv/bin/python -m tests.docs_tables` ({name})"


def test_the_readme_names_every_command_and_only_commands_that_exist():
    exists, named = docs_tables.cli_commands(), docs_tables.readme_commands()
    assert not exists - named, f"commands missing from README.md's table: {sorted(exists - named)}"
    assert not named - exists, f"README.md names commands that do not exist: {sorted(named - exists)}"


def test_every_rule_id_is_documented_and_every_documented_one_exists():
    code, docs = docs_tables.rule_ids_in_code(), docs_tables.rule_ids_in_docs()
    assert not code - docs, f"rule ids missing from docs/policy.md: {sorted(code - docs)}"
    assert not docs - code, f"docs/policy.md documents rule ids the code never names: {sorted(docs - code)}"


def test_the_methods_table_gives_each_method_the_scope_it_has():
    """docs/signer-protocol.md's Tier 1 table (method | scope | params | result) is written by hand."""
    scopes = docs_tables.method_scopes()
    text = (ROOT / "docs" / "signer-protocol.md").read_text()
    rows = re.findall(r"^\| `([a-z0-9_.]+)` \| (read|sign|admin|bridge) \|", text, re.M)
    assert len(rows) >= 10
    wrong = {
        method: scope for method, scope in rows if scopes.get(method) is None or scopes[method].value != scope
    }
    assert not wrong, f"methods the table gives another scope than the code (or that do not exist): {wrong}"


def test_a_doc_that_drifted_is_caught(tmp_path, monkeypatch):
    """The check can fail: a scope table missing a method is not the generated one."""
    doc = tmp_path / "signer-protocol.md"
    real = (ROOT / "docs" / "signer-protocol.md").read_text()
    doc.write_text(real.replace("`sign.status`, ", "", 1))
    monkeypatch.setattr(docs_tables, "ROOT", tmp_path.parent)
    monkeypatch.setitem(
        docs_tables.GENERATED,
        "scopes",
        (f"{tmp_path.name}/signer-protocol.md", docs_tables.GENERATED["scopes"][1]),
    )
    assert docs_tables.current("scopes") != docs_tables.GENERATED["scopes"][1]()
