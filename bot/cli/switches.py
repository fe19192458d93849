"""`enable`, `disable` and `remove` for third-party code: one implementation for `owlia skill` and `owlia mcp`.

Both stores (skills_runtime.store.SkillStore, bot.mcp_servers.store.McpStore) keep named entries
that are switched on and off or removed whole; each change is a decision on record (bot.cli.decisions)
and `remove` asks first. What differs is said by a `Kind`: the words, the store, the errors worded
for the user (`guard`) and what goes with a removed entry (an MCP server's OAuth tokens).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import typer

from bot.cli.decisions import record_decision
from bot.cli.screen import ask


class NamedEntries(Protocol):
    def entry(self, name: str) -> Any: ...

    def set_enabled(self, name: str, enabled: bool) -> Any: ...

    def remove(self, name: str) -> Any: ...


@dataclass(frozen=True)
class Kind:
    noun: str
    """How a question names one: "skill", "MCP server"."""
    record: str
    """The decisions' prefix (`skill.enabled`) and the field naming the entry (`skill=NAME`)."""
    field: str
    store: Callable[[typer.Context], NamedEntries]
    guard: Callable[[Callable[[], Any]], Any]
    """Runs a store call; its errors end the command with their words (`fail`)."""
    enabled_note: str = ""
    """Said after `enabled NAME`."""
    forget: Callable[[typer.Context, str], None] | None = None
    """What goes with a removed entry, after the store removed it."""


def add_switches(app: typer.Typer, kind: Kind) -> None:
    """Mount `enable NAME`, `disable NAME` and `remove NAME [--yes]` on `app`."""

    def enable(ctx: typer.Context, name: str) -> None:
        kind.guard(lambda: kind.store(ctx).set_enabled(name, True))
        record_decision(ctx, f"{kind.record}.enabled", **{kind.field: name})
        typer.echo(f"enabled {name}{kind.enabled_note}")

    def disable(ctx: typer.Context, name: str) -> None:
        kind.guard(lambda: kind.store(ctx).set_enabled(name, False))
        record_decision(ctx, f"{kind.record}.disabled", **{kind.field: name})
        typer.echo(f"disabled {name}")

    def remove(ctx: typer.Context, name: str, yes: bool = typer.Option(False, "--yes", "-y")) -> None:
        store = kind.store(ctx)
        kind.guard(lambda: store.entry(name))
        ask(f"Remove {kind.noun} {name}?", yes=yes, refusal="not removed")
        kind.guard(lambda: store.remove(name))
        if kind.forget is not None:
            kind.forget(ctx, name)
        record_decision(ctx, f"{kind.record}.removed", **{kind.field: name})
        typer.echo(f"removed {name}")

    app.command("enable")(enable)
    app.command("disable")(disable)
    app.command("remove")(remove)
