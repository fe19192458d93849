"""`owlia sign send` as a typer command: its help, usage errors and any value typer has to convert.

A plain command line takes the typer-free path to the same body (bot/cli/sign_send.py).
"""

from __future__ import annotations

from typing import Optional

import typer

from bot.cli.sign_send import DEFAULT_CHAIN_ID, Refused, SendRequest, send_transfer
from policies.kernel.cli import fail, home_of

app = typer.Typer(
    help="Ask the signer to sign (policy-checked like any agent request).", no_args_is_help=True
)


@app.command("send")
def send(
    ctx: typer.Context,
    to: str = typer.Option(
        ...,
        "--to",
        help="Recipient address (checksummed or lowercase), or a name from the signer's address book.",
    ),
    value: str = typer.Option(..., "--value", help="Amount with unit: 0.01eth, 1000wei, 12gwei, 5usdc."),
    data: Optional[str] = typer.Option(None, "--data", help="Calldata hex for a raw call."),
    chain_id: int = typer.Option(DEFAULT_CHAIN_ID, "--chain", help="Chain id."),
    reason: Optional[str] = typer.Option(None, help="Why (recorded, shown as unverified)."),
    idempotency_key: Optional[str] = typer.Option(None, help="Reuse to make a retry safe."),
) -> None:
    """Prints the signer's JSON outcome. Exit: 0 signed, 3 pending approval, 4 denied, 1 failed."""
    request = SendRequest(
        home_of(ctx),
        to=to,
        value=value,
        data=data,
        chain_id=chain_id,
        reason=reason,
        idempotency_key=idempotency_key,
    )
    try:
        code = send_transfer(request)
    except Refused as exc:
        fail(exc.message)
    raise typer.Exit(code)
