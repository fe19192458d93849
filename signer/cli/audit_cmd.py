"""`owlia audit`: verify and read the signer's hash-chained audit log."""

from __future__ import annotations

from typing import Optional

import typer

from policies.kernel.cli import fail, print_json
from signer.wire.cli import signer_paths

app = typer.Typer(help="Verify and read the signer's audit log.", no_args_is_help=True)


@app.command("verify")
def verify(ctx: typer.Context, replay: bool = typer.Option(True, help="Also re-run every decision from its record.")) -> None:
    """Check every record's hash, order and the tail anchor; exit 1 on any tampering."""
    from signer.replay import replay_decisions
    from signer.store.audit import verify as verify_log
    from signer.store.db import connect

    paths = signer_paths(ctx)
    if not paths.db.exists():
        fail(f"no signer database at {paths.db}")
    conn = connect(paths.db, readonly=True)
    report = verify_log(conn, paths.anchor)
    result = {"ok": report.ok, "records": report.records, "problems": report.problems}
    if replay and report.ok:
        mismatches = replay_decisions(conn)
        result["replay_mismatches"] = mismatches
        result["ok"] = not mismatches
    print_json(result)
    if not result["ok"]:
        raise typer.Exit(1)


@app.command("tail")
def tail(
    ctx: typer.Context,
    n: int = typer.Option(20, "-n", help="How many records."),
    kind: Optional[str] = typer.Option(None, help="Only records of this kind, e.g. sign.decided."),
) -> None:
    """Print the last records (read directly; run as the signer's user)."""
    from signer.store.audit import tail as tail_log
    from signer.store.db import connect

    paths = signer_paths(ctx)
    if not paths.db.exists():
        fail(f"no signer database at {paths.db}")
    conn = connect(paths.db, readonly=True)
    print_json([e.to_json() for e in tail_log(conn, n, kind=kind)])
