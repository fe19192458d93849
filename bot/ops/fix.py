"""`owlia security audit --fix`: apply the fixes that can only tighten, and nothing else.

A fix here removes permission bits; it never adds one, never follows a symlink, never changes
an owner, never edits config or policy (loosening or tightening a policy is the user's call,
and loosening needs the companion app). Everything else stays a hint for a human.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from bot.ops.audit import AUDIT_CHECKS
from bot.ops.checks import Finding, Skip
from bot.ops.context import OpsContext


def apply_fix(finding: Finding) -> str | None:
    """Apply one finding's fix if it is still safe; return what was done, or None."""
    fix = finding.fix
    if fix is None:
        return None
    try:
        info = os.lstat(fix.path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None  # chmod would follow it to whatever it points at
    current = stat.S_IMODE(info.st_mode)
    if fix.mode & ~current:  # would add a bit: not a tightening, refuse
        return None
    try:
        os.chmod(fix.path, fix.mode)
    except OSError:  # a read-only mount (a container's config): stays a hint for the host's owner
        return None
    return f"chmod {fix.mode:04o} {fix.path} (was {current:04o})"


def collect_findings(ctx: OpsContext) -> Iterable[Finding]:
    for check in AUDIT_CHECKS:
        try:
            yield from check.run(ctx)
        except Skip:
            continue
        except Exception:  # noqa: BLE001 - the report run afterwards shows the failing check
            continue


def fix_all(ctx: OpsContext) -> list[str]:
    """Apply every safe fix the audit finds; return one line per change."""
    return [done for finding in list(collect_findings(ctx)) if (done := apply_fix(finding))]
