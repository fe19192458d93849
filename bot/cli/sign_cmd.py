"""`owlia sign send`: submit a transfer through exactly the client path the bot uses."""

from __future__ import annotations

from typing import Any, Optional

import typer

from policies.kernel.cli import fail, print_json, run
from signer.wire.cli import client_token_file, print_reply, signer_paths
from policies.units import parse_units, read_amount

app = typer.Typer(help="Ask the signer to sign (policy-checked like any agent request).", no_args_is_help=True)

EXIT_SIGNED, EXIT_FAILED, EXIT_PENDING, EXIT_DENIED = 0, 1, 3, 4


def parse_amount(text: str, assets: list[dict[str, Any]], chain_id: int) -> tuple[str | None, int]:
    """`0.01eth`, `1000wei`, `12 gwei`, `5usdc` -> (token address or None for native, base units).

    The same grammar as /send in chat (policies.units.read_amount): the unit is always written.
    """
    amount = read_amount(text)
    if amount.native:
        return None, amount.native_wei()
    found = [a for a in assets if a.get("chain") == chain_id and str(a.get("symbol", "")).lower() == amount.unit
             and a.get("asset") != "native"]
    if not found:
        raise ValueError(f"unknown token {amount.unit!r} on chain {chain_id}: the signer's policy has no such asset "
                         "(`owlia signer status` lists the policy's assets)")
    return found[0]["asset"], parse_units(amount.number, int(found[0]["decimals"]))


@app.command("send")
def send(
    ctx: typer.Context,
    to: str = typer.Option(..., "--to", help="Recipient address (checksummed or lowercase)."),
    value: str = typer.Option(..., "--value", help="Amount with unit: 0.01eth, 1000wei, 12gwei, 5usdc."),
    data: Optional[str] = typer.Option(None, "--data", help="Calldata hex for a raw call."),
    chain_id: int = typer.Option(31337, "--chain", help="Chain id."),
    reason: Optional[str] = typer.Option(None, help="Why (recorded, shown as unverified)."),
    idempotency_key: Optional[str] = typer.Option(None, help="Reuse to make a retry safe."),
) -> None:
    """Prints the signer's JSON outcome. Exit: 0 signed, 3 pending approval, 4 denied, 1 failed."""
    from signer.wire.client import SignerClient, SignerError, load_token
    from signer.wire.replies import PolicyShowReply, SignReply

    paths = signer_paths(ctx)
    try:
        token = load_token(client_token_file(ctx))
    except SignerError as exc:
        fail(exc.message)

    async def submit() -> SignReply:
        async with SignerClient(paths.socket, token) as client:
            assets: list[dict[str, Any]] = []
            if not read_amount(value).native:
                assets = (await client.call_as(PolicyShowReply, "policy.show")).policy.get("assets", [])
            token_addr, amount = parse_amount(value, assets, chain_id)
            if token_addr is None:
                intent: dict[str, Any] = {"chain_id": chain_id, "to": to, "value": str(amount)}
                if data:
                    intent["data"] = data
            else:
                if data:
                    raise ValueError("--data cannot be combined with a token amount")
                intent = {"chain_id": chain_id,
                          "token_transfer": {"token": token_addr, "recipient": to, "amount": str(amount)}}
            return await client.sign(intent, idempotency_key=idempotency_key, reason=reason, source="cli")

    try:
        outcome = run(submit())
    except ValueError as exc:
        fail(str(exc))
    except SignerError as exc:
        print_json({"status": "error", "code": exc.code, "error": exc.message, "data": exc.data})
        raise typer.Exit(EXIT_FAILED)
    print_reply(outcome)
    from signer.wire.protocol import RequestStatus  # here, not at the top: `owlia --help` loads no pydantic

    exit_codes = {RequestStatus.SIGNED: EXIT_SIGNED, RequestStatus.PENDING: EXIT_PENDING, RequestStatus.DENIED: EXIT_DENIED}
    raise typer.Exit(exit_codes.get(outcome.status, EXIT_FAILED))
