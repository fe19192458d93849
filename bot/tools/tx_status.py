"""Where a transaction stands: by the signer's request id, or by hash straight from the chain.

By request id the answer is the signer's own record (its summary, its rule), plus the block from a
receipt when a chain reader is configured. By hash it is whatever the chain says about a hash the
model may have copied from anywhere, so that output is marked untrusted. Signer error texts can
carry an RPC URL (which may hold an API key), so URLs are cut from anything shown.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import Field, model_validator

from bot.tools.base import Level, ToolArgs, ToolContext, ToolFailure, ToolOutput, tool
from bot.tools.chain_reader import redact_urls
from bot.tools.signer_words import humane
from signer.wire.exchange import SignerError
from signer.wire.protocol import ErrorCode, RequestStatus
from signer.wire.sign_replies import SignReply


class TxStatusArgs(ToolArgs):
    request_id: str | None = Field(
        default=None,
        pattern=r"^req_[0-9a-f]{32}$",
        description="a signer request id (req_...) from transfer/contract_call",
    )
    tx_hash: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{64}$", description="0x + 64 hex")
    chain_id: int | None = Field(
        default=None, gt=0, lt=2**63, description="with tx_hash only; default: the bot's default chain"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> TxStatusArgs:
        if (self.request_id is None) == (self.tx_hash is None):
            raise ValueError("give exactly one of request_id or tx_hash")
        if self.request_id is not None and self.chain_id is not None:
            raise ValueError("chain_id goes with tx_hash only; a request id knows its chain")
        return self


async def receipt_of(ctx: ToolContext, chain_id: int, tx_hash: str) -> dict[str, Any] | None:
    chain = ctx.services.chain
    if chain is None:
        return None
    receipt = await chain.call(chain_id, "eth_getTransactionReceipt", tx_hash)
    return receipt if isinstance(receipt, dict) and receipt.get("blockNumber") else None


def _block(receipt: dict[str, Any]) -> int:
    return int(str(receipt["blockNumber"]), 16)


def _mined(receipt: dict[str, Any]) -> tuple[str, str]:
    ok = str(receipt.get("status", "0x0")) == "0x1"
    state = (RequestStatus.CONFIRMED if ok else RequestStatus.REVERTED).value
    return state, f"{state} in block {_block(receipt)}"


async def _by_request(ctx: ToolContext, request_id: str) -> ToolOutput:
    signer = ctx.require_signer("request ids cannot be looked up")
    try:
        reply = await signer.call_as(SignReply, "sign.status", {"request_id": request_id})
    except SignerError as exc:
        if exc.code == ErrorCode.NOT_FOUND:
            return ToolOutput(
                "That request was not found (not made by this bot, or unknown).",
                untrusted=False,
                data={"request_id": request_id, "state": "not_found"},
            )
        raise ctx.signer_failure(exc, "the signer could not answer") from None
    status, state = reply.status.value, reply.state or ""
    tx_hash, chain_id = reply.tx_hash, reply.chain_id
    data: dict[str, Any] = {"request_id": request_id, "state": state or status, "status": status}
    if status == RequestStatus.EXPIRED:
        line = "expired: the approval window passed without an answer; nothing was signed"
        data["state"] = RequestStatus.EXPIRED.value
    elif state == RequestStatus.PENDING:
        until = datetime.fromtimestamp(float(reply.expires_at or 0), timezone.utc)
        line = f"waiting for the user's approval in the companion app (until {until:%Y-%m-%d %H:%M} UTC)"
    elif state == RequestStatus.DENIED:
        line = f"refused by the user's policy: {humane(redact_urls(reply.reason))}"
    elif state == RequestStatus.FAILED:
        line = f"failed, nothing was sent: {redact_urls(reply.error or reply.reason)}"
    elif state == RequestStatus.DROPPED:
        line = (
            f"dropped: another of the signer's transactions took its nonce, so it can never be mined; "
            f"tx {tx_hash}"
        )
    elif (
        state
        in (RequestStatus.SIGNED, RequestStatus.UNCONFIRMED, RequestStatus.CONFIRMED, RequestStatus.REVERTED)
        and tx_hash
    ):
        data.update(tx_hash=tx_hash, chain_id=chain_id)
        unread = ""
        try:
            receipt = await receipt_of(ctx, int(chain_id), str(tx_hash)) if chain_id else None
        except ToolFailure as exc:  # the signer's record still stands; say the chain was unreadable
            receipt, unread = None, f" (could not read the chain: {exc})"
        if receipt is not None:
            data["state"], line = _mined(receipt)
            data["block"] = _block(receipt)
        elif state in (RequestStatus.CONFIRMED, RequestStatus.REVERTED):
            line = state
        elif reply.broadcast is False:
            line = "signed but not broadcast (the signer runs with broadcast off)"
        elif state == RequestStatus.UNCONFIRMED:
            line = (
                "signed, but the node did not accept the broadcast; it may still be mined, so do not send it "
                "again (the signer keeps its spend counted until it is mined or proven dropped)"
            )
        else:
            line, data["state"] = "signed and broadcast, pending (no receipt yet)", "pending"
        line += f"; tx {tx_hash}{unread}"
    else:
        line = f"being processed by the signer ({redact_urls(state or status or 'unknown', 40)})"
    summary = redact_urls(reply.summary, 500)
    # worded for people, without the request id or rule ids: the model quotes what it reads here
    text = f"That request: {line}." + (f"\nSigner's reading: {humane(summary)}" if summary else "")
    # A revert reason is the contract's text, and a failure may quote a node: not the signer's words.
    foreign = state == RequestStatus.FAILED or reply.rule_id == "simulation.reverted"
    return ToolOutput(text, untrusted=foreign, data=data)


async def _by_hash(ctx: ToolContext, tx_hash: str, chain_id: int) -> ToolOutput:
    chain = ctx.services.chain
    if chain is None:
        raise ToolFailure("no chain RPC is configured, so transaction hashes cannot be looked up")
    receipt = await receipt_of(ctx, chain_id, tx_hash)
    data: dict[str, Any] = {"tx_hash": tx_hash, "chain_id": chain_id}
    if receipt is not None:
        data["state"], line = _mined(receipt)
        data["block"] = _block(receipt)
    elif isinstance(await chain.call(chain_id, "eth_getTransactionByHash", tx_hash), dict):
        data["state"], line = "pending", "pending (known to the node, not yet in a block)"
    else:
        data["state"], line = "not_found", f"not found on chain {chain_id}"
    return ToolOutput(f"Transaction {tx_hash}: {line}.", untrusted=True, data=data)


@tool(
    "tx_status",
    Level.READ,
    TxStatusArgs,
    description="""
Status of a transaction: give exactly one of request_id (a signer request) or tx_hash (looked up
on chain_id). Answers pending, confirmed in block N, reverted, denied/expired, or not found.""",
)
async def tx_status(ctx: ToolContext, args: TxStatusArgs) -> ToolOutput:
    if args.request_id is not None:
        return await _by_request(ctx, args.request_id)
    assert args.tx_hash is not None
    return await _by_hash(ctx, args.tx_hash.lower(), args.chain_id or ctx.services.default_chain_id)


TX_TOOLS = (tx_status,)
