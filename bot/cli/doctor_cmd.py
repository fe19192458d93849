"""`owlia doctor`: is everything installed, configured, reachable and logged in?"""

from __future__ import annotations

import typer

from policies.kernel.cli import home_of


def doctor(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the stable JSON report."),
    timeout: float = typer.Option(5.0, min=0.1, max=60, help="Seconds per network probe."),
) -> None:
    """Check Python, config, workspace, model logins, signer, chains, channels, sandbox; exit 1 on failure."""
    from bot.ops.context import OpsContext  # lazy: 112 ms, 19300 KiB (3 imports)
    from bot.ops.doctor import doctor as run_doctor
    from bot.ops.render import print_report

    report = run_doctor(OpsContext.load(home_of(ctx), rpc_timeout=timeout, http_timeout=timeout))
    print_report(report, as_json)
    if not report.ok:
        raise typer.Exit(1)
