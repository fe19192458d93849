"""The result model shared by `owlia security audit` and `owlia doctor`.

Check ids are stable (`OWL-PERM-002`, `DOC-SIGNER-001`) so scripts, CI gates and the docs can
name a finding across releases; messages may improve, ids never change meaning. Every finding
carries the hint (a command, where there is one) that fixes it, and says whether `--fix` may
apply it on its own: only changes that can only tighten are marked fixable.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

REPORT_VERSION = 1


class Severity(str, Enum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Fix:
    """A safe fix: set `path` to `mode` (only ever removes permission bits we do not need)."""

    path: Path
    mode: int


@dataclass(frozen=True, slots=True)
class Finding:
    check_id: str
    severity: Severity
    message: str
    hint: str
    fix: Fix | None = None

    @property
    def fixable(self) -> bool:
        return self.fix is not None


@dataclass(frozen=True, slots=True)
class Check:
    """One check: `run` returns its findings, or raises `Skip` when it cannot judge here."""

    check_id: str
    title: str
    run: Callable[..., Iterable[Finding]]


class Skip(Exception):
    """The check could not run (e.g. the signer home is not readable by this user): say why."""


# ---- the stable JSON shape -------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FindingOut(_Out):
    id: str
    severity: Literal["critical", "warning", "info"]
    message: str
    hint: str
    fixable: bool


class CheckOut(_Out):
    id: str
    title: str
    status: Literal["pass", "fail", "skip"]
    detail: str = ""
    findings: list[FindingOut] = []


class Report(_Out):
    version: int = REPORT_VERSION
    kind: Literal["security-audit", "doctor"]
    ok: bool  # no critical finding (audit) / no failing check (doctor)
    counts: dict[str, int]
    checks: list[CheckOut]
    fixed: list[str] = []  # what --fix changed, one line each

    def findings(self) -> list[FindingOut]:
        return [f for c in self.checks for f in c.findings]


def run_checks(
    kind: Literal["security-audit", "doctor"],
    checks: Iterable[Check],
    *args: object,
    fixed: list[str] | None = None,
) -> Report:
    """Run every check; a check that crashes is a failed check, never a crashed command."""
    results: list[CheckOut] = []
    for check in checks:
        try:
            found = list(check.run(*args))
        except Skip as exc:
            results.append(CheckOut(id=check.check_id, title=check.title, status="skip", detail=str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - one broken probe must not hide the others
            found = [
                Finding(
                    check.check_id,
                    Severity.WARNING,
                    f"the check itself failed ({type(exc).__name__})",
                    "re-run with a valid config; report a bug if it persists",
                )
            ]
        results.append(
            CheckOut(
                id=check.check_id,
                title=check.title,
                status="fail" if found else "pass",
                findings=[
                    FindingOut(
                        id=f.check_id,
                        severity=f.severity.value,
                        message=f.message,
                        hint=f.hint,
                        fixable=f.fixable,
                    )
                    for f in found
                ],
            )
        )
    counts = {s.value: 0 for s in Severity}
    for check_out in results:
        for f in check_out.findings:
            counts[f.severity] += 1
    ok = counts["critical"] == 0  # warnings and notes are advice; only a critical finding fails the run
    return Report(kind=kind, ok=ok, counts=counts, checks=results, fixed=fixed or [])


# ---- permission helpers both audit and fix use ---------------------------------------------


def mode_of(path: Path) -> int | None:
    """Permission bits of `path` itself (not a symlink's target); None if it does not exist."""
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


def too_open(check_id: str, severity: Severity, path: Path, allowed: int) -> Finding | None:
    """A finding if `path` has any bit outside `allowed`; `None` if it is tight or absent.

    A symlink where a secret should be is always a finding, and never auto-fixed: chmod would
    change whatever it points at.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return Finding(
            check_id,
            severity,
            f"{path} is a symlink; secrets must be regular files",
            f"replace {path} with the file itself (0600)",
        )
    mode = stat.S_IMODE(info.st_mode)
    if not mode & ~allowed:
        return None
    tight = mode & allowed
    return Finding(
        check_id,
        severity,
        f"{path} has mode {mode:04o} (want {allowed:04o} or tighter)",
        f"chmod {tight:o} {path}",
        Fix(path, tight),
    )
