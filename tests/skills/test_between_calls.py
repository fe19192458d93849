"""Nothing of a skill runs between its calls: whatever it leaves behind kills the sandbox, a quiet
sandbox stays warm, an idle one is stopped, and a flood on the RPC pipe or stderr kills it."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from tests.skills.conftest import HOSTILE, audit_records, needs_bwrap, sandbox_processes

pytestmark = needs_bwrap
LINGER = HOSTILE / "linger"


def _kinds(home, kind: str) -> list[dict]:
    return [r for r in audit_records(home) if r["kind"] == kind]


async def _gone(seconds: float) -> bool:
    """True once no sandbox process is left on the machine (within `seconds`)."""
    deadline = time.monotonic() + seconds
    while sandbox_processes() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not sandbox_processes()


@pytest.mark.parametrize(
    "tool, why",
    [
        ("relay", "left running after the call"),  # CPU burners that each stay under RLIMIT_CPU
        ("sleeper", "left running after the call"),  # memory held by a child, per-process limits only
        ("thread", "threads"),  # a thread in the SDK process itself
        ("flicker", ""),  # members live a moment: a scan or init's counters
        ("timer", "ran code between calls"),  # a signal handler in the SDK: only counters show it
        ("after", ""),  # children burn right after the answer, reaped at once
    ],
)
def test_work_left_behind_by_a_call_kills_the_sandbox_and_the_next_call_starts_fresh(
    run_skills, home, tool, why
):
    async def scenario(loaded):
        first = await loaded.call("linger", tool)
        gone = await _gone(3)
        again = await loaded.call("linger", "quiet")
        return first, gone, again

    first, gone, again = run_skills(scenario, LINGER)
    assert first.content.endswith("\nok") and again.content.endswith("\nok")  # the call itself still answers
    assert gone
    kills = _kinds(home, "skill.idle_kill")
    assert kills and why in kills[0]["reason"]
    assert len(_kinds(home, "skill.started")) == 2


def test_a_quiet_skill_stays_warm_across_idle_checks(run_skills, home):
    async def scenario(loaded):
        await loaded.call("linger", "quiet")
        await loaded.call("linger", "child")  # a child it waited for is fine
        await asyncio.sleep(1.2)  # several looks at the idle sandbox
        return await loaded.call("linger", "quiet")

    assert run_skills(scenario, LINGER).content.endswith("\nok")
    assert len(_kinds(home, "skill.started")) == 1 and _kinds(home, "skill.idle_kill") == []


def test_an_idle_sandbox_is_stopped_and_the_next_call_starts_a_fresh_one(run_skills, home):
    async def scenario(loaded):
        loaded.skills.host.idle_timeout = 0.5
        await loaded.call("linger", "quiet")
        gone = await _gone(3)
        return gone, await loaded.call("linger", "quiet")

    gone, again = run_skills(scenario, LINGER)
    assert gone and again.content.endswith("\nok")
    stops = _kinds(home, "skill.idle_stop")
    assert stops and stops[0]["reason"] == "no call for 0.5s"
    assert len(_kinds(home, "skill.started")) == 2


def test_stderr_written_between_calls_is_bounded_and_kills_the_sandbox(run_skills, home):
    async def scenario(loaded):
        loaded.skills.host.idle_check = 60.0  # the watcher sleeps: only the stderr bound can act
        await loaded.call("linger", "noise")
        before = os.times()
        gone = await _gone(3)
        await asyncio.sleep(1)  # a window of the bot's own CPU time: what is measured, not awaited
        after = os.times()
        return gone, (after.user - before.user) + (after.system - before.system)

    gone, bot_cpu = run_skills(scenario, LINGER)
    assert gone and bot_cpu < 0.5  # the bot's own event loop is not kept busy reading
    kills = _kinds(home, "skill.idle_kill")
    assert kills and "stderr between calls" in kills[0]["reason"]


def test_deeply_nested_json_on_the_rpc_pipe_kills_the_sandbox(run_skills):
    async def scenario(loaded):
        failed = await loaded.failure("linger", "deep")
        slot = loaded.skills.host._slots["linger"]
        return failed, slot.process.alive, await _gone(3)

    failed, alive, gone = run_skills(scenario, LINGER)
    assert "broke the protocol" in failed and "killed" in failed
    assert alive is False and gone


def test_a_sandbox_being_killed_is_never_handed_the_next_call(run_skills, home):
    """SIGKILL sent but not reaped yet (a kill the watcher began and a new call cancelled)."""

    async def scenario(loaded):
        await loaded.call("linger", "quiet")
        process = loaded.skills.host._slots["linger"].process
        process.kill_now()
        alive = process.alive
        return alive, await loaded.call("linger", "quiet")

    alive, again = run_skills(scenario, LINGER)
    assert alive is False and again.content.endswith("\nok")
    assert len(_kinds(home, "skill.started")) == 2
