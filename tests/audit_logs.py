"""The skills audit as the skills and MCP tests read it: records, once the chain is known to verify."""

from __future__ import annotations

import json
from pathlib import Path

from bot.observability.audit import skills_audit_path, verify_audit


def skills_audit_records(home: Path) -> list[dict]:
    """The records of `home`'s skills audit (none before its first); every test that reads them
    also checks that the hash chain is unbroken."""
    path = skills_audit_path(home)
    if not path.exists():
        return []
    ok, count, problem = verify_audit(path)
    assert ok, f"the skills audit's chain is broken after {count} records: {problem}"
    return [json.loads(line) for line in path.read_text().splitlines()]
