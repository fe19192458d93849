"""Skill tools as the model and the registry see them: names, tiers, argument checking."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from pydantic import ValidationError

from bot.config import ToolSettings
from bot.skills.tools import args_model, skill_tool
from bot.tools.base import ContextKind, Level
from bot.tools.registry import ToolRegistry
from skills_runtime.docker_backend import docker_spec
from skills_runtime.manifest import parse_manifest
from skills_runtime.sandbox import Limits, Staged
from skills_runtime.store import InstalledSkill
from tests.skills.conftest import EXAMPLES

MANIFEST = """---
name: notes
version: 0.1.0
description: test skill
entrypoint: main.py
tools:
  - name: look
    level: read
    description: read something
    input_schema:
      type: object
      properties:
        count: {type: integer, minimum: 1, maximum: 10}
        mode: {type: string, enum: [fast, slow]}
        tag: {type: string, maxLength: 8, pattern: "^[a-z]+$"}
      required: [count]
  - {name: keep, level: write, description: write something}
  - {name: pay, level: sign, description: sign something}
---
"""


class _Host:
    def timeout(self, skill):
        return 5.0


def skill() -> InstalledSkill:
    manifest = parse_manifest(MANIFEST)
    return InstalledSkill("notes", EXAMPLES, manifest, "0" * 64, True)


def tools():
    found = skill()
    return {t.name: t for t in (skill_tool(_Host(), found, decl) for decl in found.manifest.tools)}


def test_names_tiers_and_confirmation_follow_the_manifest():
    made = tools()
    assert set(made) == {"skill_notes_look", "skill_notes_keep", "skill_notes_pay"}
    assert [made[n].level for n in sorted(made)] == [Level.WRITE, Level.READ, Level.SIGN]
    keep = made["skill_notes_keep"]
    assert "third-party skill notes" in keep.confirmation_text(keep.args.model_validate({}))
    assert (
        made["skill_notes_look"].description == "[third-party skill, untrusted: notes v0.1.0] read something"
    )


@pytest.mark.parametrize(
    "kind, visible",
    [
        (ContextKind.DM, {"skill_notes_look", "skill_notes_keep", "skill_notes_pay"}),
        (ContextKind.GROUP, {"skill_notes_look", "skill_notes_keep"}),
        (ContextKind.CRON, {"skill_notes_look"}),
        (ContextKind.SKILL, set()),
    ],
)
def test_the_registry_context_rules_apply_to_skill_tools(kind, visible):
    registry = ToolRegistry(tools().values(), ToolSettings())
    assert {t.name for t in registry.visible(kind, "console")} == visible


def test_the_schema_the_model_sees_is_the_declared_one():
    schema = tools()["skill_notes_look"].spec().parameters
    assert schema["required"] == ["count"] and schema["additionalProperties"] is False
    assert schema["properties"]["count"]["maximum"] == 10


@given(
    st.dictionaries(
        st.sampled_from(["count", "mode", "tag", "extra"]),
        st.one_of(st.integers(-5, 20), st.text(max_size=12), st.booleans(), st.none()),
    )
)
def test_arguments_pass_only_if_they_fit_the_declared_schema(arguments):
    model = args_model("notes", skill().manifest.tools[0])
    fits = (
        "extra" not in arguments
        and isinstance(arguments.get("count"), int)
        and not isinstance(arguments.get("count"), bool)
        and 1 <= arguments["count"] <= 10
        and arguments.get("mode") in (None, "fast", "slow")
        and (
            arguments.get("tag") is None
            or (
                isinstance(arguments["tag"], str)
                and 0 < len(arguments["tag"]) <= 8
                and arguments["tag"].isascii()
                and arguments["tag"].isalpha()
                and arguments["tag"].islower()
            )
        )
    )
    try:
        model.model_validate(arguments)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == fits, arguments


def test_the_docker_spec_has_the_equivalent_lockdown(tmp_path):
    staged = Staged(tmp_path, tmp_path / "skill", tmp_path / "sdk.py")
    spec = docker_spec("python:3.11-slim", staged, "main.py", Limits(memory_mb=128, max_processes=16))
    assert spec["network_mode"] == "none" and spec["read_only"] is True and spec["cap_drop"] == ["ALL"]
    assert spec["security_opt"] == ["no-new-privileges:true"] and spec["user"] == "65534:65534"
    assert spec["pids_limit"] == 16 and spec["mem_limit"] == 128 << 20 == spec["memswap_limit"]
    assert all(v["mode"] == "ro" for v in spec["volumes"].values())
    assert (
        "noexec" in spec["tmpfs"]["/tmp"]
        and "environment" in spec
        and "OWLIA_HOME" not in spec["environment"]
    )
