"""`owlia audit`: verify and read the signer's hash-chained audit log."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import typer

from policies.kernel.cli import fail, print_json, read_passphrase
from signer.wire.cli import signer_call_as, signer_paths
from signer.wire.settings import SignerPaths

app = typer.Typer(help="Verify and read the signer's audit log.", no_args_is_help=True)


@app.command("verify")
def verify(
    ctx: typer.Context,
    replay: bool = typer.Option(True, help="Also re-run every decision from its record."),
    passphrase_file: Optional[Path] = typer.Option(
        None,
        "--passphrase-file",
        help="0600 file holding the passphrase (else OWLIA_SIGNER_PASSPHRASE, else a prompt).",
    ),
    against_companion: Optional[Path] = typer.Option(
        None,
        "--against-companion",
        help="The companion's witness file (its latest signed checkpoint): a shorter or rewritten log fails.",
    ),
) -> None:
    """Check every record's MAC, order and the tail anchor; exit 1 on any tampering.

    The chain is keyed by the master key: with no passphrase given (no --passphrase-file, no
    OWLIA_SIGNER_PASSPHRASE) and the signer running, the daemon checks it (admin token); otherwise
    this unlocks the keystore with the passphrase (prompting on a terminal)."""
    from policies.kernel.passphrase import PASSPHRASE_ENV  # lazy: 76 ms, 18136 KiB (5 imports)
    from signer.keystore import KeystoreError, unlock
    from signer.replay import replay_decisions
    from signer.store.audit import AuditKeys, verify as verify_log
    from signer.store.db import connect

    paths = signer_paths(ctx)
    if not paths.db.exists():
        fail(f"no signer database at {paths.db}")
    conn = connect(paths.db, readonly=True)
    report: Mapping[str, Any]  # the daemon's reply, or the verification's report: the same fields
    if passphrase_file is None and not os.environ.get(PASSPHRASE_ENV) and _daemon_reachable(paths):
        from signer.wire.replies import (  # lazy: 18 ms, 728 KiB
            AuditVerifyReply,  # the running daemon holds the keys
        )

        report = signer_call_as(ctx, AuditVerifyReply, "audit.verify", admin=True).model_dump(mode="json")
    else:
        try:
            with unlock(paths.home, read_passphrase(passphrase_file)) as master:
                keys = AuditKeys.derive(master)
        except KeystoreError as exc:
            fail(str(exc))
        report = verify_log(conn, paths.anchor, keys=keys).to_json()
    result = {"ok": report["ok"], "records": report["records"], "problems": report["problems"]}
    if against_companion is not None:
        from signer.tier1.audit_witness import check_against  # lazy: 41 ms, 15624 KiB (2 imports)
        from signer.wire.witness import WitnessError

        try:
            behind = check_against(conn, against_companion)
        except WitnessError as exc:
            fail(str(exc))
        result["companion_checkpoint"] = behind.to_json()
        if not behind.ok:
            result["ok"] = False
            result["problems"] = [*report["problems"], *behind.problems]
    if replay and result["ok"]:
        mismatches = replay_decisions(conn)
        result["replay_mismatches"] = mismatches
        result["ok"] = not mismatches
    print_json(result)
    if not result["ok"]:
        raise typer.Exit(1)


def _daemon_reachable(paths: SignerPaths) -> bool:
    return paths.socket.exists() and paths.admin_token.exists() and os.access(paths.admin_token, os.R_OK)


@app.command("tail")
def tail(
    ctx: typer.Context,
    n: int = typer.Option(20, "-n", min=1, help="How many records."),
    kind: Optional[str] = typer.Option(None, help="Only records of this kind, e.g. sign.decided."),
) -> None:
    """Print the last records (read directly; run as the signer's user)."""
    from signer.store.audit import tail as tail_log  # lazy: 26 ms, 8064 KiB (2 imports)
    from signer.store.db import connect

    paths = signer_paths(ctx)
    if not paths.db.exists():
        fail(f"no signer database at {paths.db}")
    conn = connect(paths.db, readonly=True)
    print_json([e.to_json() for e in tail_log(conn, n, kind=kind)])
