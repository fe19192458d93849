"""`owlia skill disable` / `remove`, run in another process while the bot is up, stop the skill at
its next call: the bot loaded its tools at start, but it must not keep running what the user withdrew."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.skills.tools import load_skill_tools
from bot.tools.base import ToolFailure
from policies.kernel.aio import run as run_loop
from tests.skills.conftest import EXAMPLES, FAST, audit_records, install, make_ctx, needs_bwrap

REPO = Path(__file__).resolve().parents[2]


def owlia(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OWLIA_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "skill", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_bwrap
@pytest.mark.parametrize(
    ("command", "why"),
    [(("disable", "gas_tracker"), "was disabled"), (("remove", "gas_tracker", "--yes"), "was removed")],
)
def test_a_withdrawn_skill_stops_at_its_next_call(home: Path, tmp_path: Path, command, why):
    install(home, EXAMPLES / "gas_tracker")
    skills = load_skill_tools(home, FAST, None)  # as `owlia start` loads them
    (tool,) = [t for t in skills.tools if t.name == "skill_gas_tracker_gas_price"]

    done = owlia(home, *command)
    assert done.returncode == 0, done.stderr

    async def call() -> str:
        try:
            with pytest.raises(ToolFailure) as caught:
                await tool.handler(make_ctx(tmp_path), tool.args.model_validate({"gas_units": 21000}))
            return str(caught.value)
        finally:
            await skills.close()

    message = run_loop(asyncio.wait_for(call(), 60))
    assert why in message and "gas_tracker" in message
    assert not [r for r in audit_records(home) if r["kind"] == "skill.started"], "the withdrawn skill ran"
