"""What the user decided about third-party code, on record.

`owlia skill` and `owlia mcp` write each decision (installed or added, approved, enabled, disabled,
removed) to the audit file every skill and MCP record goes to, `~/.owliabot/logs/skills-audit.jsonl`
(0600, hash-chained): when a skill or a server got the permissions it runs with is answered there,
next to what it did with them.
"""

from __future__ import annotations

from typing import Any

import typer

from policies.kernel.cli import home_of


def record_decision(ctx: typer.Context, kind: str, **fields: Any) -> None:
    from bot.observability.audit import BotAudit, skills_audit_path  # lazy: 9 ms, 5136 KiB

    BotAudit(skills_audit_path(home_of(ctx))).record(kind, **fields)
