"""Hostile skills that attack resources (processes, memory, CPU, pipes): bounded, killed, audited."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.skills.conftest import FAST, HOSTILE, audit_records, needs_bwrap, sandbox_processes

pytestmark = needs_bwrap
EVIL = HOSTILE / "evil"


def test_fork_bomb_is_bounded_and_the_whole_sandbox_dies(run_skills, home):
    async def scenario(loaded):
        counted = await loaded.result("evil", "count_forks")
        started = time.monotonic()
        bomb = await loaded.failure("evil", "fork_bomb")
        return counted, bomb, time.monotonic() - started

    counted, bomb, seconds = run_skills(scenario, EVIL)
    assert counted["made"] < FAST.max_processes and counted["refused"] > 400
    assert "killed" in bomb and seconds < FAST.call_timeout + 2
    deadline = time.monotonic() + 5
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes() == []
    kills = [r for r in audit_records(home) if r["kind"] == "skill.call" and r.get("killed")]
    assert kills and kills[-1]["tool"] == "fork_bomb"


def test_unbounded_allocation_fails_inside_and_the_skill_keeps_working(run_skills):
    async def scenario(loaded):
        failed = await loaded.call("evil", "allocate")
        again = await loaded.call("evil", "flood_stderr")
        return failed, again

    failed, again = run_skills(scenario, EVIL)
    assert failed.content.endswith("the skill reported an error: out of memory")
    assert again.content.endswith("still here")


def test_an_endless_loop_is_killed_at_the_deadline_and_the_next_call_gets_a_fresh_sandbox(run_skills, home):
    async def scenario(loaded):
        started = time.monotonic()
        failed = await loaded.failure("evil", "spin")
        elapsed = time.monotonic() - started
        after = await loaded.result("evil", "write_outside")
        events = [(e.name, e.data["tool"]) for e in loaded.ctx.services.events.poll(type="tool")]
        return failed, elapsed, after, events

    failed, elapsed, after, events = run_skills(scenario, EVIL)
    assert events == [("skill.killed", "spin")]
    assert "no answer within 1s" in failed and FAST.call_timeout <= elapsed < FAST.call_timeout + 1.5
    assert after["/tmp/ok"] == "OK: written"
    starts = [r for r in audit_records(home) if r["kind"] == "skill.started"]
    assert len(starts) == 2 and starts[0]["missing"] == []


def test_flooding_the_rpc_channel_kills_the_sandbox(run_skills):
    async def scenario(loaded):
        return await loaded.failure("evil", "flood_stdout")

    assert "larger than" in run_skills(scenario, EVIL)


def test_a_100_mb_result_is_refused_without_buffering_it(run_skills):
    settings = FAST.model_copy(update={"memory_mb": 1024, "call_timeout": 10.0})

    async def scenario(loaded):
        return await loaded.failure("evil", "huge_result")

    assert "larger than 1065536 bytes" in run_skills(scenario, EVIL, settings=settings)


def test_stderr_noise_is_drained_and_bounded(run_skills):
    async def scenario(loaded):
        output = await loaded.call("evil", "flood_stderr")
        slot = next(iter(loaded.skills.host._slots.values()))
        return output, len(slot.process.stderr_tail)

    output, kept = run_skills(scenario, EVIL)
    assert output.content.endswith("still here") and output.untrusted
    assert kept <= 4096


def test_the_sandbox_is_torn_down_when_the_host_closes(run_skills):
    async def scenario(loaded):
        await loaded.call("evil", "flood_stderr")
        assert sandbox_processes()

    run_skills(scenario, EVIL)
    deadline = time.monotonic() + 5
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes() == []


def test_a_call_cancelled_by_the_executor_kills_the_sandbox(run_skills):
    async def scenario(loaded):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(loaded.call("evil", "spin"), 0.5)
        slot = next(iter(loaded.skills.host._slots.values()))
        return slot.process.alive

    assert run_skills(scenario, EVIL) is False
