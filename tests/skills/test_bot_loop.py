"""Skills and MCP servers start on the event loop `owlia start` and `owlia chat` run (uvloop, via
policies.kernel.aio), and a bot running as root starts each sandbox as the unprivileged sandbox user.

uvloop's subprocess spawning takes no `user=`/`group=`/`extra_groups=` arguments: a sandbox started
with them failed on that loop ("unexpected kwargs"), so every skill and MCP tool failed for a bot
run as root, while the tests, on asyncio's loop, passed. The privilege drop is now an exec in the
child (util-linux's setpriv), which any loop can start."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from policies.kernel.aio import loop_name
from skills_runtime.sandbox import SANDBOX_UID
from tests.skills.conftest import HOSTILE, needs_bwrap, sandbox_processes

pytestmark = needs_bwrap


def _ids(pid: int, field: str) -> set[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return {int(x) for x in line.split()[1:]}
    raise AssertionError(f"no {field} for {pid}")


def test_a_skill_runs_on_the_bots_loop_as_the_sandbox_user(run_skills):
    assert loop_name() == "uvloop"  # what `owlia start` runs; run_skills uses the same loop

    async def scenario(loaded):
        answer = await loaded.call("linger", "quiet")
        return answer, [
            (_ids(pid, "Uid"), _ids(pid, "Gid"), _ids(pid, "Groups") if os.geteuid() == 0 else set())
            for pid in sandbox_processes()
        ]

    answer, sandboxes = run_skills(scenario, HOSTILE / "linger")
    assert answer.content.endswith("\nok")
    assert sandboxes  # warm: still running when looked at
    if os.geteuid() == 0:  # real, effective, saved and filesystem ids all dropped; no extra groups
        assert all(
            uids == {SANDBOX_UID} and gids == {SANDBOX_UID} and groups == set()
            for uids, gids, groups in sandboxes
        ), sandboxes
    else:
        assert all(uids == {os.geteuid()} for uids, _, _ in sandboxes)


def test_a_root_bot_without_setpriv_reports_the_sandbox_unavailable(monkeypatch, tmp_path):
    """Fail closed: never start bubblewrap as root because the tool to drop root is missing."""
    from skills_runtime import sandbox

    monkeypatch.setattr(sandbox, "SETPRIV", str(tmp_path / "no-setpriv"))
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    why = sandbox.Bubblewrap().unavailable()
    assert why is not None and "util-linux" in why and "ordinary user" in why


def test_the_bots_tests_run_on_the_bots_loop():
    """tests/conftest.py runs each module's `asyncio.run` on the loop its code is deployed on: a plain
    `asyncio.run` in a bot-side test is on uvloop too, not only the harnesses that ask for it."""

    async def running() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert asyncio.run(running()).startswith("uvloop") == (loop_name() == "uvloop")
