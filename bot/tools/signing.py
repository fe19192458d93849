"""`sign` tools: they build an intent and hand it to the signer; they never sign anything.

The model chooses what to ask for; the signer decodes the bytes itself, applies the user's policy
and answers signed / pending_approval / denied. What the user sees is the signer's own summary of
the bytes (ToolOutput.data, rendered by the channel), never the model's description. A recipient
the user did not write in this conversation is flagged, so the policy can escalate or deny it.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from pydantic import Field

from bot.tools.base import Level, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from bot.tools.contacts import address_named
from bot.tools.signer_words import Companion, companion_of, outcome_text
from bot.tools.wallet import policy_assets
from policies.decision import Outcome
from policies.intent import NATIVE
from policies.kernel.addresses import ADDRESS_PATTERN, is_address
from policies.kernel.text import visible
from policies.units import parse_units
from signer.wire.exchange import SignerError
from signer.wire.protocol import RequestStatus
from signer.wire.replies import AddressesReply
from signer.wire.sign_replies import PolicyShowReply, SignReply

ADDRESS = ADDRESS_PATTERN
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]")


RECIPIENT = (
    r"^(0x[0-9a-fA-F]{40}|[A-Za-z0-9][A-Za-z0-9 ._-]{0,39})$"  # an address, or a name (contacts.clean_name)
)


class TransferArgs(ToolArgs):
    to: str = Field(
        pattern=RECIPIENT,
        description="recipient address (0x + 40 hex), or a name from the address book or contacts",
    )
    amount: str = Field(
        pattern=r"^[0-9]{1,40}(\.[0-9]{1,40})?$", description='decimal amount in whole units, e.g. "0.01"'
    )
    asset: str = Field(
        default="ETH", max_length=42, description="symbol from the policy (ETH, USDC...) or token address"
    )
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
    try:
        shown = await ctx.require_signer(NOTHING_SIGNED).call_as(PolicyShowReply, "policy.show")
    except SignerError as exc:
        raise ctx.signer_failure(exc, "the signer could not answer") from None
    for entry in policy_assets(shown, chain_id):
        asset_id = entry.asset.lower()
        if wanted in (entry.symbol.lower(), asset_id) or (wanted in ("eth", NATIVE) and asset_id == NATIVE):
            return asset_id, entry.decimals, entry.symbol
    raise ToolFailure(
        f"{asset} is not an asset your policy lists on chain {chain_id}; "
        "only listed assets can be sent from chat"
    )


def outcome_data(
    reply: SignReply, companion: Companion | None = None, usd_micros: int | None = None
) -> dict[str, Any]:
    """The fields the signer sent, plus what the words need: every reason that fired (plain, and
    the rule ids apart for /details), the dollar value the signer priced, and where to approve."""
    keep = (
        "status",
        "request_id",
        "tx_hash",
        "summary",
        "rule_id",
        "reason",
        "expires_at",
        "chain_id",
        "sender",
        "nonce",
        "broadcast",
        "broadcast_unknown",
        "error",
        "replayed",
        "tier",
        "denied_by",
    )
    sent = reply.model_dump(mode="json", include=set(keep), exclude_unset=True)  # the fields the signer sent
    data: dict[str, Any] = {k: sent[k] for k in keep if k in sent}
    findings = fired_findings(reply)
    if findings:
        data["reasons"] = [reason for _, reason in findings]  # every rule that fired, not only the first
        data["rule_ids"] = [rule for rule, _ in findings]
    spends = reply.decision.spends if reply.decision is not None else ()
    if any(s.usd_micros is not None for s in spends):
        data["usd_micros"] = sum(int(s.usd_micros or 0) for s in spends)
    elif usd_micros is not None:  # the signer priced nothing: the bot's own price of what was asked
        data["usd_micros"] = usd_micros
    if spends:
        data["amount_base_units"] = [f"{s.amount} of {s.asset}" for s in spends]
    status = reply.status
    if status not in (
        RequestStatus.SIGNED,
        RequestStatus.PENDING,
        RequestStatus.DENIED,
        RequestStatus.EXPIRED,
    ):
        data["error"] = str(reply.error or reply.reason or "no reason given")  # the card shows why
    if fix := remedy(str(data.get("error") or data.get("broadcast_unknown") or "")):
        data["hint"] = fix  # and what to do about it
    if companion is not None:
        if companion.app_url:
            data["app_url"] = companion.app_url
        if companion.paired is not None:
            data["companion_paired"] = companion.paired
    return data


def outcome_output(
    reply: SignReply, companion: Companion | None = None, usd_micros: int | None = None
) -> ToolOutput:
    """The model hears the words the user reads (it quotes them), never its own account; the channel
    gets the full reply as data and shows the same words as the signer's card."""
    data = outcome_data(reply, companion, usd_micros)
    lines = [outcome_text(data, companion_of(data))]
    if reply.status is RequestStatus.DENIED:
        lines.append("Do not try to get around it.")
    if reply.status is RequestStatus.PENDING:
        lines.append(f"(Reference for tx_status only; never show it to the user: {reply.request_id})")
    return ToolOutput("\n".join(lines), untrusted=False, data=data)


def fired_findings(reply: SignReply) -> list[tuple[str, str]]:
    """(rule, reason) for every finding of the signer's decision that was not an allow."""
    findings = reply.decision.findings if reply.decision is not None else ()
    fired = [(f.rule_id, f.reason) for f in findings if f.outcome is not Outcome.ALLOW]
    if not fired and reply.rule_id and reply.reason and reply.status is not RequestStatus.SIGNED:
        fired = [(reply.rule_id, reply.reason)]
    return fired


def fired_rules(reply: SignReply) -> list[str]:
    """`rule: reason` for every finding of the signer's decision that was not an allow (for logs)."""
    return [f"{rule}: {reason}" for rule, reason in fired_findings(reply)]


def remedy(error: str) -> str | None:
    """What the user can do about a failure the node reported, in the commands that do it."""
    if "insufficient funds" in error.lower():
        return (
            "The session key has too little ETH for the amount plus gas: fund it with "
            "`owlia signer session-key topup KEY_ID` on the signer's host or `owlia companion topup KEY_ID` "
            "(`owlia signer session-key list` shows the key ids)."
        )
    return None


def _provenance_flags(ctx: ToolContext, to: str) -> list[str]:
    """Tell the signer when the user did not write the recipient in this conversation
    (bot.tools.provenance). A local contact is not enough: anyone paired in a shared chat can add
    one; only the signer's address book makes an address known."""
    return [] if ctx.provenance.user_wrote(to) else ["recipient_from_untrusted_content"]


def one_visible_line(reason: str) -> str | None:
    """One line, every hidden character written out: the signer refuses control characters in a
    reason (it is shown on the approval screen), and a model's newline should not fail a transfer."""
    return visible(" ".join(reason.split())) or None


async def _submit(
    ctx: ToolContext,
    intent: dict[str, Any],
    reason: str,
    flagged: list[str],
    usd_micros: int | None = None,
    step: str = "",
) -> ToolOutput:
    if flagged:
        intent["flags"] = flagged
    try:
        reply = await ctx.require_signer(NOTHING_SIGNED).sign(
            intent,
            idempotency_key=idempotency_key(ctx, step),
            reason=one_visible_line(reason),
            source=ctx.source,
        )
    except SignerError as exc:
        raise ctx.signer_failure(exc, "the signer refused the request") from None
    ctx.services.events.emit(
        "signer",
        "sign.outcome",
        {
            "status": reply.status.value,
            "rule_id": reply.rule_id,
            "request_id": reply.request_id,
            "shown": ctx.shown_in_chat,
        },
    )
    return outcome_output(reply, await companion_reach(ctx, reply), usd_micros)


async def companion_reach(ctx: ToolContext, reply: SignReply) -> Companion:
    """Where a waiting request is approved: the app's page, and whether any companion is paired."""
    app_url = ctx.services.companion_app_url
    if reply.status is not RequestStatus.PENDING or ctx.services.signer is None:
        return Companion(app_url=app_url)
    return Companion(app_url=app_url, paired=await companion_paired(ctx.services.signer))


async def companion_paired(signer: Any) -> bool | None:
    """True/False from the signer's `addresses` (None when it cannot say: an older signer, an error)."""
    try:
        answer = await signer.call_as(AddressesReply, "addresses")
    except (SignerError, OSError, ValueError):
        return None
    if "companions" not in answer.model_fields_set:
        return None
    return answer.companions > 0


async def _named_recipient(ctx: ToolContext, chain_id: int, name: str) -> str:
    """The address a name stands for: the signer's address book first, then the local contacts."""
    found = await address_named(ctx.services.signer, ctx.services.state_dir, chain_id, name)
    if found is None:
        raise ToolFailure(
            f"{name!r} is neither an address nor a name in the address book or the contacts; nothing was sent"
        )
    return found[0]


@tool(
    "transfer",
    Level.SIGN,
    TransferArgs,
    timeout=90,
    description="""
Send native coin or a listed ERC-20 token. The signer decides: it may sign at once, ask the user's
companion app, or refuse. Report its outcome to the user as given.""",
)
async def transfer(ctx: ToolContext, args: TransferArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    asset_id, decimals, symbol = await resolve_asset(ctx, chain_id, args.asset)
    try:
        amount = parse_units(args.amount, decimals)
    except ValueError as exc:
        raise ToolFailure(f"amount: {exc}") from None
    to = args.to if is_address(args.to) else await _named_recipient(ctx, chain_id, args.to)
    flags = _provenance_flags(
        ctx, to
    )  # a name's address was not written by the user: known only if in the book
    if asset_id == NATIVE:
        intent: dict[str, Any] = {"chain_id": chain_id, "to": to, "value": str(amount), "data": "0x"}
    else:
        intent = {
            "chain_id": chain_id,
            "token_transfer": {"token": asset_id, "recipient": to, "amount": str(amount)},
        }
    return await _submit(ctx, intent, args.reason, flags, await usd_micros_of(ctx, symbol, amount, decimals))


async def usd_micros_of(ctx: ToolContext, symbol: str, amount: int, decimals: int) -> int | None:
    """The bot's price of an amount, in micro-dollars (shown beside it; the signer's limits use its own)."""
    prices = ctx.services.prices
    if prices is None:
        return None
    try:
        price = await prices.usd_price(symbol)
    except Exception:  # noqa: BLE001 - a transfer without a dollar value is still a transfer
        return None
    if not price:
        return None
    with localcontext() as exact:
        exact.prec = 200
        try:
            return int(Decimal(amount) * Decimal(price) * 1_000_000 / (Decimal(10) ** decimals))
        except (InvalidOperation, ValueError):
            return None


@tool(
    "contract_call",
    Level.SIGN,
    ContractCallArgs,
    timeout=90,
    description="""
Call a contract with raw calldata. The signer decodes the call itself (approvals, nested calls) and
applies the policy; unknown contracts are escalated to the user, and a function the signer cannot
decode is denied unless the user's policy accepts it by name (opaque_calls).""",
)
async def contract_call(ctx: ToolContext, args: ContractCallArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    flags = _provenance_flags(ctx, args.to)
    intent = {"chain_id": chain_id, "to": args.to, "value": args.value_wei, "data": args.data}
    return await _submit(ctx, intent, args.reason, flags)


SIGN_TOOLS = (transfer, contract_call)
