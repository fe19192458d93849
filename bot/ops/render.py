"""Printing a report: the stable JSON for scripts, or one line per finding for people."""

from __future__ import annotations

import typer

from bot.ops.checks import Report

MARK = {
    "pass": ("ok  ", typer.colors.GREEN),
    "skip": ("skip", typer.colors.BRIGHT_BLACK),
    "critical": ("FAIL", typer.colors.RED),
    "warning": ("WARN", typer.colors.YELLOW),
    "info": ("note", typer.colors.BLUE),
}
WORST = ("critical", "warning", "info")
SEVERITY_COLOR = {"critical": typer.colors.RED, "warning": typer.colors.YELLOW, "info": typer.colors.BLUE}


def print_report(report: Report, as_json: bool) -> None:
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    for line in report.fixed:
        typer.secho(f"fixed: {line}", fg=typer.colors.GREEN)
    for check in report.checks:
        worst = next((s for s in WORST if any(f.severity == s for f in check.findings)), None)
        label, color = MARK[worst if check.status == "fail" and worst else check.status]
        detail = f" ({check.detail})" if check.detail else ""
        typer.secho(f"[{label}] {check.id} {check.title}{detail}", fg=color)
        for f in check.findings:
            typer.secho(f"       {f.severity.upper()} {f.id}: {f.message}", fg=SEVERITY_COLOR[f.severity])
            typer.echo(f"         fix: {f.hint}" + ("   [--fix can apply this]" if f.fixable else ""))
    counts = ", ".join(f"{n} {k}" for k, n in report.counts.items())
    typer.echo(f"{'OK' if report.ok else 'NOT OK'}: {counts}")
