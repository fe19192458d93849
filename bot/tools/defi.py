"""`sign` tools for DeFi: swap (exact input, one Uniswap v3 pool), wrap and unwrap.

Like `transfer`, they build calldata and hand it to the signer, which decodes it, reads its own quote
from the chain and decides (docs/defi.md). The bot's quote only chooses the minimum it asks for:
half the slippage the policy allows, so the signer's own quote (a block later, perhaps) still
accepts it. The router, its quoter and WETH come from the signer's policy, never from the model;
tokens are resolved by the policy's symbols and addresses. The output goes to the account that
pays: the session key the signer signs with, or on a Tier 3 chain the main account its grant spends
from (the swap lane, docs/tier3.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.tools.base import Level, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from bot.tools.signing import NOTHING_SIGNED, _submit, resolve_asset
from policies.intent import NATIVE
from policies.kernel.files import read_regular_text
from policies.units import format_amount, parse_units
from signer.wire import swap_template
from signer.wire.exchange import SignerError
from signer.wire.replies import AddressesReply
from signer.wire.sign_replies import PolicyShowReply
from signer.wire.swap_template import SwapCall

MULTICALL = bytes.fromhex("ac9650d8")
UNWRAP_WETH9 = bytes.fromhex("49404b7c")
QUOTE_EXACT_INPUT_SINGLE = bytes.fromhex("c6a5026a")
APPROVE = bytes.fromhex("095ea7b3")
ALLOWANCE = bytes.fromhex("dd62ed3e")
DEPOSIT = bytes.fromhex("d0e30db0")
WITHDRAW = bytes.fromhex("2e1a7d4d")
DEFAULT_FEE = 3000  # the 0.3 % pools
DEADLINE_SECONDS = 300
AMOUNT_PATTERN = r"^[0-9]{1,40}(\.[0-9]{1,40})?$"


def _word(value: int) -> bytes:
    return value.to_bytes(32, "big")


def _address(address: str) -> bytes:
    return bytes(12) + bytes.fromhex(address[2:])


def _bytes_array(items: list[bytes]) -> bytes:
    """abi.encode(bytes[]) as the single argument of multicall(bytes[])."""
    head, tail = b"", b""
    offset = 32 * len(items)
    for item in items:
        head += _word(offset + len(tail))
        padded = item + bytes((32 - len(item) % 32) % 32)
        tail += _word(len(item)) + padded
    return _word(32) + _word(len(items)) + head + tail


def exact_input_single(
    token_in: str, token_out: str, fee: int, recipient: str, deadline: int, amount_in: int, min_out: int
) -> bytes:
    """The swap's calldata, the price limit 0 (the signer requires it): the same encoder the signer's
    Tier 3 swap lane uses (signer.wire.swap_template)."""
    return swap_template.exact_input_single(
        SwapCall(token_in, token_out, fee, recipient, deadline, amount_in, min_out, price_limit=0)
    )


class _Router(BaseModel):
    model_config = ConfigDict(extra="ignore")
    chain: int
    address: str
    quoter: str
    weth: str
    name: str


class _Swaps(BaseModel):
    model_config = ConfigDict(extra="ignore")
    routers: list[_Router]
    max_slippage_bps: int = Field(ge=0, le=5000)
    max_deadline_seconds: int = Field(gt=0)


@dataclass(frozen=True)
class Market:
    router: _Router
    max_slippage_bps: int
    deadline_seconds: int
    payer: str


async def market(ctx: ToolContext, chain_id: int) -> Market:
    """The policy's router on this chain and the session key that pays (the newest active one)."""
    signer = ctx.require_signer(NOTHING_SIGNED)
    try:
        shown = await signer.call_as(PolicyShowReply, "policy.show")
        keys = await signer.call_as(AddressesReply, "addresses")
    except SignerError as exc:
        raise ToolFailure(f"the signer could not answer: {exc.message}") from None
    raw = shown.policy.get("swaps")
    if not raw:
        raise ToolFailure("the signer's policy has no swaps section, so it swaps nothing (docs/defi.md)")
    try:
        swaps = _Swaps.model_validate(raw)
    except ValidationError:
        raise ToolFailure("the signer returned a swaps section this bot cannot read") from None
    router = next((r for r in swaps.routers if r.chain == chain_id), None)
    if router is None:
        raise ToolFailure(f"the signer's policy lists no swap router on chain {chain_id}")
    mine = sorted((k for k in keys.addresses if k.chain_id == chain_id), key=lambda k: k.expires_at)
    if not mine:
        raise ToolFailure(
            f"no active session key on chain {chain_id}: create one with "
            "`owlia signer session-key create` and top it up"
        )
    # On a Tier 3 chain the main account pays and receives; the session key only redeems the grant.
    tier3 = [a for a in keys.tier3_accounts if a.chain_id == chain_id]
    return Market(
        router,
        swaps.max_slippage_bps,
        min(DEADLINE_SECONDS, swaps.max_deadline_seconds // 2),
        (tier3[0].address if tier3 else mine[-1].address).lower(),
    )


async def _eth_call(ctx: ToolContext, chain_id: int, to: str, data: bytes) -> bytes:
    if ctx.services.chain is None:
        raise ToolFailure("no RPC is configured for reading the chain, so no quote can be read")
    raw = await ctx.services.chain.call(chain_id, "eth_call", {"to": to, "data": "0x" + data.hex()}, "latest")
    if not isinstance(raw, str) or not raw.startswith("0x"):
        raise ToolFailure("the RPC node sent a malformed answer")
    return bytes.fromhex(raw[2:])


async def quote(
    ctx: ToolContext, chain_id: int, quoter: str, token_in: str, token_out: str, amount: int, fee: int
) -> int:
    data = (
        QUOTE_EXACT_INPUT_SINGLE
        + _address(token_in)
        + _address(token_out)
        + _word(amount)
        + _word(fee)
        + _word(0)
    )
    answer = await _eth_call(ctx, chain_id, quoter, data)
    if len(answer) < 128:
        raise ToolFailure("the quoter gave no quote (is there a pool for this pair and fee?)")
    return int.from_bytes(answer[:32], "big")


async def _wait_mined(ctx: ToolContext, chain_id: int, tx_hash: str, timeout: float = 60.0) -> None:
    assert ctx.services.chain is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        receipt = await ctx.services.chain.call(chain_id, "eth_getTransactionReceipt", tx_hash)
        if isinstance(receipt, dict):
            if receipt.get("status") != "0x1":
                raise ToolFailure(f"the approval {tx_hash} reverted; nothing was swapped")
            return
        await asyncio.sleep(0.25)
    raise ToolFailure(f"the approval {tx_hash} was not mined within {timeout:.0f} s; nothing was swapped yet")


class SwapArgs(ToolArgs):
    amount: str = Field(pattern=AMOUNT_PATTERN, description='amount to sell, in whole units, e.g. "0.005"')
    token_in: str = Field(
        default="ETH", max_length=42, description="what to sell: ETH or a symbol/address the policy lists"
    )
    token_out: str = Field(
        max_length=42, description="what to buy: a symbol/address the policy lists, or ETH"
    )
    chain_id: int | None = Field(default=None, gt=0)
    reason: str = Field(default="", max_length=200, description="why; shown to the user marked unverified")


@tool(
    "swap",
    Level.SIGN,
    SwapArgs,
    timeout=120,
    description="""
Swap an exact amount of ETH or a listed token for a listed token or ETH through the router the
user's policy lists. The signer checks the swap against its own quote and the policy, then signs,
asks the user's companion app, or refuses. A token sold needs an approval first: this tool asks for
one of exactly the amount. Report the signer's outcome as given.""",
)
async def swap(ctx: ToolContext, args: SwapArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    m = await market(ctx, chain_id)
    weth = m.router.weth.lower()
    asset_in, decimals_in, symbol_in = await resolve_asset(ctx, chain_id, args.token_in)
    asset_out, decimals_out, symbol_out = await resolve_asset(ctx, chain_id, args.token_out)
    if asset_in == asset_out or {asset_in, asset_out} <= {NATIVE, weth}:
        raise ToolFailure("that is no swap: use wrap or unwrap to move between ETH and WETH")
    try:
        amount = parse_units(args.amount, decimals_in)
    except ValueError as exc:
        raise ToolFailure(f"amount: {exc}") from None
    token_in = weth if asset_in == NATIVE else asset_in
    token_out = weth if asset_out == NATIVE else asset_out
    expected = await quote(ctx, chain_id, m.router.quoter, token_in, token_out, amount, DEFAULT_FEE)
    minimum = expected - expected * (m.max_slippage_bps // 2) // 10_000
    router = m.router.address.lower()
    if asset_in != NATIVE:
        approved = await _approve_if_needed(ctx, chain_id, asset_in, m.payer, router, amount, args.reason)
        if approved is not None:
            return approved
    deadline = int(time.time()) + m.deadline_seconds
    if asset_out == NATIVE:  # the router receives WETH, then pays it out as ETH to the payer
        calls = [
            exact_input_single(token_in, token_out, DEFAULT_FEE, router, deadline, amount, minimum),
            UNWRAP_WETH9 + _word(minimum) + _address(m.payer),
        ]
        data = MULTICALL + _bytes_array(calls)
    else:
        data = exact_input_single(token_in, token_out, DEFAULT_FEE, m.payer, deadline, amount, minimum)
    value = amount if asset_in == NATIVE else 0
    intent: dict[str, Any] = {
        "chain_id": chain_id,
        "to": router,
        "value": str(value),
        "data": "0x" + data.hex(),
    }
    output = await _submit(ctx, intent, args.reason, [])
    note = (
        f"asked: sell {format_amount(amount, decimals_in, symbol_in)} for at least "
        f"{format_amount(minimum, decimals_out, symbol_out)} (quoted {format_amount(expected, decimals_out, symbol_out)})"
    )
    return ToolOutput(f"{output.content}\n{note}", untrusted=False, data=output.data)


async def _approve_if_needed(
    ctx: ToolContext, chain_id: int, token: str, owner: str, router: str, amount: int, reason: str
) -> ToolOutput | None:
    """An approval of exactly `amount` when the router's allowance is short; None once it is in place.
    Anything but a signed, mined approval is returned as the outcome (pending, denied)."""
    allowance = int.from_bytes(
        (await _eth_call(ctx, chain_id, token, ALLOWANCE + _address(owner) + _address(router)))[:32] or b"\0",
        "big",
    )
    if allowance >= amount:
        return None
    data = APPROVE + _address(router) + _word(amount)
    output = await _submit(
        ctx,
        {"chain_id": chain_id, "to": token, "value": "0", "data": "0x" + data.hex()},
        reason,
        [],
        step="approve",
    )
    if (output.data or {}).get("status") != "signed":
        return ToolOutput(
            "the approval the swap needs was not signed:\n" + output.content,
            untrusted=False,
            data=output.data,
        )
    await _wait_mined(ctx, chain_id, str((output.data or {})["tx_hash"]))
    return None


class WrapArgs(ToolArgs):
    amount: str = Field(pattern=AMOUNT_PATTERN, description='amount in whole units, e.g. "0.01"')
    chain_id: int | None = Field(default=None, gt=0)
    reason: str = Field(default="", max_length=200, description="why; shown to the user marked unverified")


@tool(
    "wrap",
    Level.SIGN,
    WrapArgs,
    timeout=90,
    description="""
Wrap ETH into WETH (the policy's router's WETH) in the same account. The signer counts it like a
transfer of the ETH and decides. Report its outcome as given.""",
)
async def wrap(ctx: ToolContext, args: WrapArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    m = await market(ctx, chain_id)
    amount = _amount(args.amount)
    intent = {
        "chain_id": chain_id,
        "to": m.router.weth.lower(),
        "value": str(amount),
        "data": "0x" + DEPOSIT.hex(),
    }
    return await _submit(ctx, intent, args.reason, [])


@tool(
    "unwrap",
    Level.SIGN,
    WrapArgs,
    timeout=90,
    description="""
Unwrap WETH into ETH in the same account. The signer counts it like a transfer of the WETH and
decides. Report its outcome as given.""",
)
async def unwrap(ctx: ToolContext, args: WrapArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    m = await market(ctx, chain_id)
    amount = _amount(args.amount)
    data = WITHDRAW + _word(amount)
    intent = {"chain_id": chain_id, "to": m.router.weth.lower(), "value": "0", "data": "0x" + data.hex()}
    return await _submit(ctx, intent, args.reason, [])


def _amount(text: str) -> int:
    try:
        return parse_units(text, 18)  # ETH and WETH both have 18 decimals
    except ValueError as exc:
        raise ToolFailure(f"amount: {exc}") from None


CLAIM = bytes.fromhex("2e7ba6ef")  # claim(uint256,address,uint256,bytes32[])
MAX_CLAIMS_FILE = 4 * 2**20


class _Distributor(BaseModel):
    model_config = ConfigDict(extra="ignore")
    chain: int
    address: str
    token: str
    name: str


class _ClaimEntry(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int = Field(ge=0)
    amount: str = Field(pattern=r"^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$")
    proof: list[str] = Field(max_length=64)


class ClaimArgs(ToolArgs):
    distributor: str = Field(
        max_length=100, description="the distributor's name or address in the signer's policy"
    )
    proof: str = Field(
        max_length=2000, description="the claims file: a path in the workspace, or an https URL"
    )
    chain_id: int | None = Field(default=None, gt=0)
    reason: str = Field(default="", max_length=200, description="why; shown to the user marked unverified")


async def _claims_text(ctx: ToolContext, source: str) -> str:
    if source.startswith("https://") or source.startswith("http://"):
        if ctx.services.fetcher is None:
            raise ToolFailure(
                "fetching is not enabled for this bot: save the claims file in the workspace instead"
            )
        result = await ctx.services.fetcher.fetch(source)
        return str(result.text)

    root = os.path.realpath(ctx.services.workspace)
    target = os.path.realpath(os.path.join(root, source))
    if os.path.commonpath([root, target]) != root:
        raise ToolFailure("the claims file must be inside the workspace")
    try:
        if os.path.getsize(target) > MAX_CLAIMS_FILE:
            raise ToolFailure("the claims file is larger than 4 MiB")
        return read_regular_text(ctx.services.workspace / os.path.relpath(target, root))
    except OSError as exc:
        raise ToolFailure(f"cannot read the claims file: {exc.strerror}") from None


@tool(
    "claim",
    Level.SIGN,
    ClaimArgs,
    timeout=90,
    description="""
Claim an airdrop from a merkle distributor the user's policy lists, for the session key's account,
with the proof from a claims file (Uniswap merkle-distributor format) in the workspace or at a URL.
The signer checks that the claim pays the account that sends it, then decides. Report its outcome.""",
)
async def claim(ctx: ToolContext, args: ClaimArgs) -> ToolOutput:
    chain_id = args.chain_id or ctx.services.default_chain_id
    signer = ctx.require_signer(NOTHING_SIGNED)
    try:
        shown = await signer.call_as(PolicyShowReply, "policy.show")
        keys = await signer.call_as(AddressesReply, "addresses")
    except SignerError as exc:
        raise ToolFailure(f"the signer could not answer: {exc.message}") from None
    try:
        listed = [
            _Distributor.model_validate(d) for d in (shown.policy.get("claims") or {}).get("distributors", [])
        ]
    except ValidationError:
        raise ToolFailure("the signer returned a claims section this bot cannot read") from None
    wanted = args.distributor.lower()
    distributor = next(
        (d for d in listed if d.chain == chain_id and wanted in (d.name.lower(), d.address.lower())), None
    )
    if distributor is None:
        raise ToolFailure(
            f"{args.distributor} is not a distributor the signer's policy lists on chain {chain_id}"
        )
    mine = sorted((k for k in keys.addresses if k.chain_id == chain_id), key=lambda k: k.expires_at)
    if not mine:
        raise ToolFailure(f"no active session key on chain {chain_id}")
    account = mine[-1].address.lower()
    try:
        claims = json.loads(await _claims_text(ctx, args.proof)).get("claims", {})
        raw = next((v for k, v in claims.items() if isinstance(k, str) and k.lower() == account), None)
        entry = None if raw is None else _ClaimEntry.model_validate(raw)
    except (ValueError, AttributeError, ValidationError):
        raise ToolFailure("the claims file is not a merkle-distributor claims file") from None
    if entry is None:
        raise ToolFailure(f"the claims file has nothing for the session key's account {account}")
    amount = int(entry.amount, 16) if entry.amount.startswith("0x") else int(entry.amount)
    try:
        proof = [bytes.fromhex(p[2:]) for p in entry.proof]
    except ValueError:
        raise ToolFailure("a proof element is not hex") from None
    if any(len(p) != 32 for p in proof):
        raise ToolFailure("a proof element is not 32 bytes")
    data = (
        CLAIM
        + _word(entry.index)
        + _address(account)
        + _word(amount)
        + _word(128)
        + _word(len(proof))
        + b"".join(proof)
    )
    intent = {
        "chain_id": chain_id,
        "to": distributor.address.lower(),
        "value": "0",
        "data": "0x" + data.hex(),
    }
    return await _submit(ctx, intent, args.reason, [])


DEFI_TOOLS = (swap, wrap, unwrap, claim)
