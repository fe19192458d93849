"""Read tools over the signer: session-key balances and who the bot knows by name.

Symbols and decimals come only from the signer's policy (which the user wrote), never from a token
contract: anyone can deploy a token whose `symbol()` says "USDC". An unlisted token's amount is
shown raw, and said to be. Output here is built from the signer's own data, so it is not marked untrusted
(that would taint the address book's addresses for the signer's provenance flag).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.tools.base import Level, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from bot.tools.chain_reader import redact_urls
from bot.tools.contacts import LOCAL_ONLY, ContactStore, parse_address, signer_address_book, to_checksum
from policies.intent import NATIVE
from policies.units import format_amount, parse_units
from signer.wire.exchange import SignerError
from signer.wire.replies import AddressesReply, BalanceReply
from signer.wire.sign_replies import PolicyShowReply

NATIVE_DECIMALS = 18  # every EVM chain's native coin; the policy overrides it when it lists one
TOKEN_PATTERN = r"^(0x[0-9a-fA-F]{40}|[A-Za-z0-9._\-]{1,20})$"


@dataclass(frozen=True)
class AssetRef:
    asset: str  # "native" or a lowercase token address
    symbol: str | None  # None: not in the signer's policy, so unknown
    decimals: int | None


class _PolicyAsset(BaseModel):
    model_config = ConfigDict(extra="ignore")
    chain: int
    asset: str
    symbol: str = Field(min_length=1, max_length=20)
    decimals: int = Field(ge=0, le=77)


class _PolicyChain(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: int
    name: str = Field(max_length=100)


def policy_assets(shown: PolicyShowReply, chain_id: int) -> list[_PolicyAsset]:
    raw = shown.policy.get("assets", [])
    try:
        return [a for a in map(_PolicyAsset.model_validate, raw) if a.chain == chain_id]
    except ValidationError:
        raise ToolFailure("the signer returned a policy this bot cannot read") from None


def policy_chains(shown: PolicyShowReply) -> dict[int, str]:
    """Chain id -> name as the signer's policy lists them (the chains it signs for at all)."""
    raw = shown.policy.get("chains", [])
    try:
        return {c.id: c.name for c in map(_PolicyChain.model_validate, raw)}
    except ValidationError:
        raise ToolFailure("the signer returned a policy this bot cannot read") from None


def chain_label(ctx: ToolContext, chain_id: int, chains: dict[int, str] | None = None) -> str:
    name = ctx.services.chain_names.get(chain_id) or (chains or {}).get(chain_id)
    return f"{name} ({chain_id})" if name else f"chain {chain_id}"


def resolve_token(assets: list[_PolicyAsset], token: str | None) -> AssetRef:
    """None -> native; a symbol must be listed in the policy; an address may be unlisted (base units)."""
    if token is None or token.lower() == NATIVE:
        native = next((a for a in assets if a.asset == NATIVE), None)
        return AssetRef(
            NATIVE, native.symbol if native else "native coin", native.decimals if native else NATIVE_DECIMALS
        )
    if token.startswith("0x"):
        try:
            address = parse_address(token).lower()
        except ValueError as exc:
            raise ToolFailure(f"token: {exc}") from None
        listed = next((a for a in assets if a.asset.lower() == address), None)
        return AssetRef(address, listed.symbol if listed else None, listed.decimals if listed else None)
    matches = [a for a in assets if a.symbol.casefold() == token.casefold()]
    if len(matches) != 1:
        known = ", ".join(sorted({a.symbol for a in assets})) or "none"
        why = "is listed twice" if matches else "is not an asset in the signer's policy"
        raise ToolFailure(
            f"{token} {why} on this chain (listed: {known}); pass the token's 0x address instead"
        )
    return AssetRef(matches[0].asset.lower(), matches[0].symbol, matches[0].decimals)


def describe_amount(amount: int, ref: AssetRef, usd_price: str | None = None) -> str:
    """`1.5 ETH (about $4,500.00)`; an unlisted token's raw amount is said to be one."""
    if ref.decimals is None or ref.symbol is None:
        return (
            f"a raw amount of {amount} of token {to_checksum(ref.asset)} (not in the signer's asset "
            "list, so its decimals and symbol are unknown)"
        )
    return format_amount(amount, ref.decimals, ref.symbol) + usd_value(amount, ref.decimals, usd_price)


def usd_value(amount: int, decimals: int, usd_price: str | None) -> str:
    """` (about $12.34)` from a decimal price string; "" when there is none."""
    if not usd_price:
        return ""
    with localcontext() as exact:
        exact.prec = 200  # a uint256 times a price: never rounded away or refused
        try:
            value = Decimal(amount) * Decimal(usd_price) / (Decimal(10) ** decimals)
            value = value.quantize(Decimal("0.01"))
        except InvalidOperation:
            return ""
        return f" (about ${value:,})" if value.is_finite() and value >= 0 else ""


class WalletBalanceArgs(ToolArgs):
    chain_id: int | None = Field(default=None, gt=0, lt=2**63, description="default: the bot's default chain")
    token: str | None = Field(
        default=None,
        pattern=TOKEN_PATTERN,
        description="symbol from the signer's policy (e.g. USDC) or a 0x token "
        "address; default: the native coin",
    )


async def _price(ctx: ToolContext, ref: AssetRef) -> str | None:
    prices = ctx.services.prices
    if prices is None or ref.symbol is None:
        return None
    try:
        return await prices.usd_price(ref.symbol)
    except Exception:  # noqa: BLE001 - a balance without a dollar value is still a balance
        return None


@tool(
    "wallet_balance",
    Level.READ,
    WalletBalanceArgs,
    description="""
Balances on one chain, for the native coin or a token: the main account (the companion's key,
which approves bigger spends; on a Tier 3 chain the account its grant spends from) and each active
session key (the keys the signer signs small spends with), in units, with dollars when a price is known.""",
)
async def wallet_balance(ctx: ToolContext, args: WalletBalanceArgs) -> ToolOutput:
    signer = ctx.require_signer("balances and its address book are unknown")
    chain_id = args.chain_id or ctx.services.default_chain_id
    try:
        shown = await signer.call_as(PolicyShowReply, "policy.show")
        ref = resolve_token(policy_assets(shown, chain_id), args.token)
        answer = await signer.call_as(AddressesReply, "addresses")
        holders: list[tuple[str, str, str]] = []  # (address, role, key id for /details)
        tier3 = [a for a in answer.tier3_accounts if a.chain_id == chain_id]
        holders += [(a.address, "main account (Tier 3 grant)", a.grant_id) for a in tier3]
        if answer.main_account and all(a.address.lower() != answer.main_account.lower() for a in tier3):
            holders.append((answer.main_account, "main account", ""))
        holders += [(k.address, "session key", k.key_id) for k in answer.addresses if k.chain_id == chain_id]
        rows: list[dict[str, Any]] = []
        for address, role, key_id in holders:
            params: dict[str, Any] = {"chain_id": chain_id, "address": address}
            if ref.asset != NATIVE:
                params["token"] = ref.asset
            reply = await signer.call_as(BalanceReply, "balance", params)
            rows.append(
                {
                    "address": to_checksum(address),
                    "role": role,
                    "key_id": key_id,
                    "balance": str(reply.balance),
                }
            )
    except SignerError as exc:
        raise ctx.signer_failure(exc, "the signer could not answer") from None
    chains = policy_chains(shown)
    where = chain_label(ctx, chain_id, chains)
    if not rows:
        note = "" if chain_id in chains else " (the signer's policy does not list this chain)"
        return ToolOutput(
            f"No main account or active session key on {where}{note}.",
            untrusted=False,
            data={"chain_id": chain_id, "balances": []},
        )
    price = await _price(ctx, ref)
    lines = [f"Balances on {where}:"]
    lines += [f"- {r['role']} {r['address']}: {describe_amount(int(r['balance']), ref, price)}" for r in rows]
    if not answer.main_account and not tier3:
        lines.append(
            "No companion is paired, so there is no main account yet (`owlia companion pair` on the "
            "signer's host pairs one)."
        )
    data = {
        "chain_id": chain_id,
        "asset": ref.asset,
        "symbol": ref.symbol,
        "decimals": ref.decimals,
        "balances": rows,
    }
    return ToolOutput("\n".join(lines), untrusted=False, data=data)


class AddressBookArgs(ToolArgs):
    chain_id: int | None = Field(
        default=None, gt=0, lt=2**63, description="only the signer's entries for this chain; default: all"
    )


@tool(
    "address_book",
    Level.READ,
    AddressBookArgs,
    description="""
Names and addresses the bot knows: the signer's policy address book (known to the signer) and the
bot's local contacts (labels only; the signer treats them as new recipients).""",
)
async def address_book(ctx: ToolContext, args: AddressBookArgs) -> ToolOutput:
    lines = ["Known to the signer (its policy address book):"]
    book: list[Any] = []
    if ctx.services.signer is None:
        lines.append("- unavailable: the bot has no usable signer client token (`/status` says why)")
    else:
        try:
            book = [
                e
                for e in await signer_address_book(ctx.services.signer)
                if args.chain_id is None or e.chain_id == args.chain_id
            ]
        except SignerError as exc:
            lines.append(f"- unavailable: {ctx.signer_failure(exc, 'the signer could not answer')}")
        else:
            rows = [f"- {e.name}: {e.address} on {chain_label(ctx, e.chain_id)}" for e in book]
            lines += rows or ["- (empty)"]
    lines.append(f"Local contacts ({LOCAL_ONLY}):")
    contacts = [] if ctx.services.state_dir is None else ContactStore(ctx.services.state_dir).load()
    known = {e.address.lower(): e.name for e in book}
    for c in contacts:
        book_name = known.get(c.address.lower())
        also = f" (also in the signer's book as {book_name!r})" if book_name else ""
        lines.append(f"- {c.name}: {c.address}{also}")
    if not contacts:
        configured = ctx.services.state_dir is not None
        lines.append("- (none)" if configured else "- unavailable: no state directory")
    data = {
        "signer": [{"chain_id": e.chain_id, "name": e.name, "address": e.address} for e in book],
        "local": [{"name": c.name, "address": c.address} for c in contacts],
    }
    return ToolOutput("\n".join(lines), untrusted=False, data=data)


class PortfolioArgs(ToolArgs):
    chain_id: int | None = Field(default=None, gt=0, lt=2**63, description="default: the bot's default chain")


def _usd_micros(amount: int, decimals: int, price: str | None) -> int | None:
    """Exact: base units x micro-dollars per whole unit, floored; None without a usable price."""
    if price is None:
        return None
    try:
        micros = parse_units(price, 6)
    except ValueError:
        return None
    return amount * micros // 10**decimals


def _dollars(micros: int) -> str:
    return f"${micros // 10**6:,}.{micros % 10**6 // 10**4:02d}"


@tool(
    "portfolio",
    Level.READ,
    PortfolioArgs,
    description="""
Every asset the signer's policy lists on one chain, held by each active session key and, on a Tier 3
chain, by the main account its grant spends from, with dollar values (the bot's price source, else
the policy's static price) and a total.""",
)
async def portfolio(ctx: ToolContext, args: PortfolioArgs) -> ToolOutput:
    signer = ctx.require_signer("balances are unknown")
    chain_id = args.chain_id or ctx.services.default_chain_id
    try:
        shown = await signer.call_as(PolicyShowReply, "policy.show")
        answer = await signer.call_as(AddressesReply, "addresses")
        assets = policy_assets(shown, chain_id)
        static = {
            str(a.get("asset", "")).lower(): a.get("price_usd")
            for a in shown.policy.get("assets", [])
            if isinstance(a, dict) and a.get("chain") == chain_id
        }
        accounts = [
            *((k.address, k.key_id) for k in answer.addresses if k.chain_id == chain_id),
            *((a.address, "tier3 main account") for a in answer.tier3_accounts if a.chain_id == chain_id),
        ]
        prices: dict[str, str | None] = {}
        for a in assets:
            live = await ctx.services.prices.usd_price(a.symbol) if ctx.services.prices is not None else None
            prices[a.asset.lower()] = live or static.get(a.asset.lower())
        rows: list[dict[str, Any]] = []
        for address, label in accounts:
            for a in assets:
                params: dict[str, Any] = {"chain_id": chain_id, "address": address}
                if a.asset != NATIVE:
                    params["token"] = a.asset.lower()
                reply = await signer.call_as(BalanceReply, "balance", params)
                usd = _usd_micros(int(reply.balance), a.decimals, prices[a.asset.lower()])
                rows.append(
                    {
                        "address": to_checksum(address),
                        "label": label,
                        "asset": a.asset.lower(),
                        "symbol": a.symbol,
                        "balance": str(reply.balance),
                        "usd_micros": usd,
                    }
                )
    except SignerError as exc:
        raise ToolFailure(f"the signer could not answer: {redact_urls(exc.message)}") from None
    where = chain_label(ctx, chain_id, policy_chains(shown))
    if not accounts:
        return ToolOutput(
            f"No active session key on {where}.", untrusted=False, data={"chain_id": chain_id, "holdings": []}
        )
    lines = [f"Portfolio on {where}:"]
    for address, label in accounts:
        held = [r for r in rows if r["address"] == to_checksum(address) and int(r["balance"]) > 0]
        parts = [
            format_amount(
                int(r["balance"]),
                next(a.decimals for a in assets if a.asset.lower() == r["asset"]),
                r["symbol"],
            )
            + (f" ({_dollars(r['usd_micros'])})" if r["usd_micros"] is not None else "")
            for r in held
        ]
        lines.append(f"- {to_checksum(address)} ({label}): {', '.join(parts) or 'nothing the policy lists'}")
    priced = [r["usd_micros"] for r in rows if r["usd_micros"] is not None]
    unpriced = sorted({r["symbol"] for r in rows if r["usd_micros"] is None and int(r["balance"]) > 0})
    total = f"Total: {_dollars(sum(priced))}"
    lines.append(total + (f" (no price for {', '.join(unpriced)})" if unpriced else ""))
    return ToolOutput(
        "\n".join(lines),
        untrusted=False,
        data={"chain_id": chain_id, "holdings": rows, "total_usd_micros": sum(priced)},
    )


WALLET_TOOLS = (wallet_balance, address_book, portfolio)
