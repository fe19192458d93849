"""Helpers: build a real ToolContext and call a tool the way the executor does (validate, then run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.tools.base import ContextKind, Tool, ToolContext, ToolOutput
from bot.tools.services import Services


def make_ctx(workspace: Path, session: str = "dm:alice", **services: Any) -> ToolContext:
    return ToolContext(
        session_key=session,
        channel="test",
        peer="alice",
        kind=ContextKind.DM,
        services=Services(workspace=workspace, **services),
    )


async def call(t: Tool, ctx: ToolContext, **arguments: Any) -> ToolOutput:
    return await t.handler(ctx, t.args.model_validate(arguments))
