"""`sign` tools: they build an intent and hand it to the signer; they never sign anything.

The model chooses what to ask for; the signer decodes the bytes itself, applies the user's policy
and answers signed / pending_approval / denied. What the user sees is the signer's own summary of
the bytes (ToolOutput.data, rendered by the channel), never the model's description. A recipient
the user did not write in this conversation is flagged, so the policy can escalate or deny it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from bot.tools.base import Level, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from bot.tools.wallet import policy_assets
from policies.decision import Outcome
from policies.intent import NATIVE
from policies.kernel.addresses import ADDRESS_PATTERN
from policies.kernel.text import visible
from policies.units import parse_units
from signer.wire.protocol import RequestStatus
from signer.wire.replies import PolicyShowReply, SignReply

ADDRESS = ADDRESS_PATTERN
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]")


class TransferArgs(ToolArgs):
    to: str = Field(pattern=ADDRESS, description="recipient address, 0x + 40 hex")
    amount: str = Field(pattern=r"^[0-9]{1,40}(\.[0-9]{1,40})?$",
                        description='decimal amount in whole units, e.g. "0.01"')
    asset: str = Field(default="ETH", max_length=42, description="symbol from the policy (ETH, USDC...) or token address")
    chain_id: int | None = Field(default=None, gt=0)
    reason: str = Field(default="", max_length=200, description="why; shown to the user marked unverified")


class ContractCallArgs(ToolArgs):
    to: str = Field(pattern=ADDRESS, description="contract address")
    data: str = Field(pattern=r"^0x([0-9a-fA-F]{2})*$", max_length=65536, description="calldata, 0x-hex")
    value_wei: str = Field(default="0", pattern=r"^[0-9]{1,78}$", description="native value in wei")
    chain_id: int | None = Field(default=None, gt=0)
    reason: str = Field(default="", max_length=200)


def idempotency_key(ctx: ToolContext, step: str = "") -> str:
    """Stable per tool call: if the same call is ever replayed, the signer signs it at most once. A
    tool that makes two requests (an approval, then a swap) names the first's `step`."""
    key = _KEY_UNSAFE.sub("_", f"{step + '.' if step else ''}{ctx.source}.{ctx.run_id}.{ctx.call_id}")[:128]
    return key if len(key) >= 8 else key.ljust(8, "_")


NOTHING_SIGNED = "nothing can be signed"


async def resolve_asset(ctx: ToolContext, chain_id: int, asset: str) -> tuple[str, int, str]:
    """(asset id, decimals, symbol) from the signer's policy; unknown assets are refused (unlike a
    balance lookup, a transfer needs the decimals the user wrote into the policy)."""
    wanted = asset.lower()
    shown = await ctx.require_signer(NOTHING_SIGNED).call_as(PolicyShowReply, "policy.show")
    for entry in policy_assets(shown, chain_id):
        asset_id = entry.asset.lower()
        if wanted in (entry.symbol.lower(), asset_id) or (wanted in ("eth", NATIVE) and asset_id == NATIVE):
            return asset_id, entry.decimals, entry.symbol
    raise ToolFailure(f"{asset} is not an asset your policy lists on chain {chain_id}; "
                      "only listed assets can be sent from chat")


def outcome_output(reply: SignReply) -> ToolOutput:
    """The model hears the signer's words, not its own; the channel gets the full reply as data."""
    status = reply.status
    summary = reply.summary or "(no summary)"
    lines = [f"signer outcome: {status}", f"signer's reading of the transaction: {summary}"]
    if status is RequestStatus.SIGNED:
        lines.append(f"tx hash: {reply.tx_hash} (broadcast: {reply.broadcast})")
        if reply.broadcast_unknown:
            lines.append(f"the node did not accept it, do not send it again: {reply.broadcast_unknown}")
    elif status is RequestStatus.PENDING:
        why = "; ".join(fired_rules(reply)) or f"{reply.rule_id}: {reply.reason}"
        lines.append(f"waiting for the user's companion app (request {reply.request_id}); why: {why}")
    elif status is RequestStatus.DENIED:
        lines.append(f"denied by rule {reply.rule_id}: {reply.reason}. Do not try to get around it.")
    keep = ("status", "request_id", "tx_hash", "summary", "rule_id", "reason", "expires_at", "chain_id",
            "sender", "nonce", "broadcast", "broadcast_unknown", "error", "replayed")
    sent = reply.model_dump(mode="json", include=set(keep), exclude_unset=True)  # the fields the signer sent
    data: dict[str, Any] = {k: sent[k] for k in keep if k in sent}
    if len(fired := fired_rules(reply)) > 1:  # every rule that fired, not only the first
        data["reasons"] = fired
    if status not in (RequestStatus.SIGNED, RequestStatus.PENDING, RequestStatus.DENIED):
        data["error"] = str(reply.error or reply.reason or "no reason given")  # the card shows why
        lines.append(f"failed: {data['error']}")
    if fix := remedy(str(data.get("error") or data.get("broadcast_unknown") or "")):
        data["hint"] = fix  # and what to do about it
        lines.append(fix)
    return ToolOutput("\n".join(lines), untrusted=False, data=data)


def fired_rules(reply: SignReply) -> list[str]:
    """`rule: reason` for every finding of the signer's decision that was not an allow."""
    findings = reply.decision.findings if reply.decision is not None else ()
    return [f"{f.rule_id}: {f.reason}" for f in findings if f.outcome is not Outcome.ALLOW]


def remedy(error: str) -> str | None:
    """What the user can do about a failure the node reported, in the commands that do it."""
    if "insufficient funds" in error.lower():
        return ("The session key has too little ETH for the amount plus gas: fund it with "
                "`owlia signer session-key topup KEY_ID` on the signer's host or `owlia companion topup KEY_ID` "
                "(`owlia signer session-key list` shows the key ids).")
    return None


def _provenance_flags(ctx: ToolContext, to: str) -> list[str]:
    """Tell the signer when the user did not write the recipient in this conversation
    (bot.agent.provenance). A local contact is not enough: anyone paired in a shared chat can add
    one; only the signer's address book makes an address known."""
    return [] if ctx.provenance.user_wrote(to) else ["recipient_from_untrusted_content"]


def one_visible_line(reason: str) -> str | None:
    """One line, every hidden character written out: the signer refuses control characters in a
    reason (it is shown on the approval screen), and a model's newline should not fail a transfer."""
    return visible(" ".join(reason.split())) or None


async def _submit(ctx: ToolContext, intent: dict[str, Any], reason: str, flagged: list[str],
                  step: str = "") -> ToolOutput:
    from signer.wire.client import SignerError

    if flagged:
        intent["flags"] = flagged
    try:
        reply = await ctx.require_signer(NOTHING_SIGNED).sign(intent, idempotency_key=idempotency_key(ctx, step),
                                        reason=one_visible_line(reason), source=ctx.source)
    except SignerError as exc:
        raise ToolFailure(f"the signer refused the request: {exc.message}") from None
    ctx.services.events.emit("signer", "sign.outcome", {"status": reply.status.value, "rule_id": reply.rule_id,
                                                        "request_id": reply.request_id,
                                                        "shown": ctx.shown_in_chat})
    return outcome_output(reply)


@tool("transfer", Level.SIGN, TransferArgs, timeout=90, description="""
Send native coin or a listed ERC-20 token. The signer decides: it may sign at once, ask the user's
companion app, or refuse. Report its outcome to the user as given.""")
async def transfer(ctx: ToolContext, args: TransferArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    asset_id, decimals, _symbol = await resolve_asset(ctx, chain_id, args.asset)
    try:
        amount = parse_units(args.amount, decimals)
    except ValueError as exc:
        raise ToolFailure(f"amount: {exc}") from None
    flags = _provenance_flags(ctx, args.to)
    if asset_id == NATIVE:
        intent: dict[str, Any] = {"chain_id": chain_id, "to": args.to, "value": str(amount), "data": "0x"}
    else:
        intent = {"chain_id": chain_id, "token_transfer": {"token": asset_id, "recipient": args.to,
                                                           "amount": str(amount)}}
    return await _submit(ctx, intent, args.reason, flags)


@tool("contract_call", Level.SIGN, ContractCallArgs, timeout=90, description="""
Call a contract with raw calldata. The signer decodes the call itself (approvals, nested calls) and
applies the policy; unknown contracts are escalated to the user, and a function the signer cannot
decode is denied unless the user's policy accepts it by name (opaque_calls).""")
async def contract_call(ctx: ToolContext, args: ContractCallArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    flags = _provenance_flags(ctx, args.to)
    intent = {"chain_id": chain_id, "to": args.to, "value": args.value_wei, "data": args.data}
    return await _submit(ctx, intent, args.reason, flags)


SIGN_TOOLS = (transfer, contract_call)
