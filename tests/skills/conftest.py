"""Skills under test run for real: installed through the store, loaded as the runtime loads them,
started in bubblewrap with the seccomp filter, and driven over their JSON-RPC pipes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from bot.config import SkillSettings
from bot.net.ssrf import FetchPolicy
from bot.skills.tools import SkillTools, load_skill_tools, tool_name
from bot.tools.base import ContextKind, Tool, ToolContext, ToolFailure, ToolOutput
from bot.tools.services import Services
from policies.kernel.aio import run as run_loop
from skills_runtime.sandbox import Bubblewrap
from skills_runtime.store import SkillStore
from tests.audit_logs import (
    skills_audit_records as audit_records,  # noqa: F401 - the skills tests import it from here
)

HERE = Path(__file__).parent
HOSTILE = HERE / "hostile"
EXAMPLES = Path(__file__).parents[2] / "skills_runtime" / "examples"
FAST = SkillSettings(
    call_timeout=1.0, memory_mb=256, cpu_seconds=5, max_processes=16, max_result_bytes=1_000_000
)


@pytest.fixture()
def bwrap_available() -> None:
    """The sandbox is part of the product: without it these tests fail (never skip), saying how to fix it."""
    why = Bubblewrap().unavailable()
    if why is not None:
        pytest.fail(
            f"the bubblewrap sandbox is unavailable ({why}): run `bash .ci/setup` as root, or "
            "`apt-get install bubblewrap libseccomp2`",
            pytrace=False,
        )


needs_bwrap = pytest.mark.usefixtures("bwrap_available")


def install(home: Path, folder: Path) -> str:
    store = SkillStore(home)
    return store.install(store.prepare(folder)).name


def make_ctx(tmp: Path, kind: ContextKind = ContextKind.DM, **services: Any) -> ToolContext:
    workspace = tmp / "workspace"
    workspace.mkdir(exist_ok=True)
    return ToolContext(
        session_key="console:tester",
        channel="console",
        peer="tester",
        kind=kind,
        services=Services(workspace=workspace, **services),
        run_id="run1",
        call_id="call1",
    )


@dataclass
class Loaded:
    skills: SkillTools
    ctx: ToolContext
    calls: int = 0

    def tool(self, skill: str, name: str) -> Tool:
        wanted = tool_name(skill, name)
        return next(t for t in self.skills.tools if t.name == wanted)

    async def call(self, skill: str, name: str, **args: Any) -> ToolOutput:
        found = self.tool(skill, name)
        self.calls += 1  # like the executor: every call has its own id
        return await found.handler(
            replace(self.ctx, call_id=f"call{self.calls}"), found.args.model_validate(args)
        )

    async def result(self, skill: str, name: str, **args: Any) -> Any:
        """The skill's JSON result (after the untrusted header line)."""
        output = await self.call(skill, name, **args)
        return json.loads(output.content.split("\n", 1)[1])

    async def failure(self, skill: str, name: str, **args: Any) -> str:
        with pytest.raises(ToolFailure) as caught:
            await self.call(skill, name, **args)
        return str(caught.value)


Scenario = Callable[[Loaded], Awaitable[Any]]


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture()
def run_skills(home: Path, tmp_path: Path):
    """run_skills(scenario, *folders, settings=..., policy=..., resolve=..., **services): install the
    folders, load them as build_runtime does and run the async scenario; the host is always closed."""

    def run(
        scenario: Scenario,
        *folders: Path,
        settings: SkillSettings = FAST,
        policy: FetchPolicy | None = None,
        resolve: Any = None,
        kind: ContextKind = ContextKind.DM,
        **services: Any,
    ) -> Any:
        for folder in folders:
            install(home, folder)
        loaded = Loaded(
            load_skill_tools(home, settings, policy, resolve=resolve), make_ctx(tmp_path, kind, **services)
        )
        assert not loaded.skills.problems, loaded.skills.problems

        async def go() -> Any:
            try:
                return await scenario(loaded)
            finally:
                await loaded.skills.close()

        return run_loop(asyncio.wait_for(go(), 60))  # the loop `owlia start` runs skills on

    return run


def sandbox_processes() -> list[int]:
    """Pids of skill sandboxes still alive on this machine (their command line names the SDK)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"/owlia/sdk.py" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
