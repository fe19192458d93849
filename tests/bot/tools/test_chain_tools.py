"""wallet_balance, address_book, contact look-alikes and tx_status against a real signer on anvil."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.devchain import rpc
from bot.tools.base import ToolContext, ToolFailure
from bot.tools.chain_reader import ChainReadError, RpcChainReader
from bot.tools.contacts import contact_add
from bot.tools.tx_status import tx_status
from bot.tools.wallet import address_book, wallet_balance
from signer.wire.client import SignerClient
from signer.wire.protocol import RequestStatus, Scope
from tests.bot.tools.support import call, make_ctx
from tests.conftest import FRIEND, STRANGER, as_json, balance, wait_receipt

pytestmark = pytest.mark.chain
TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3"  # no contract there on a fresh anvil: balance 0


def run(stack, anvil, tmp_path: Path, body, *, scope: Scope = Scope.SIGN, name: str = "bot") -> Any:
    token = stack.client_token(name, scope)

    async def main():
        reader = RpcChainReader({31337: anvil.url})
        try:
            async with SignerClient(stack.socket, token) as signer:
                ctx = make_ctx(
                    tmp_path / "ws",
                    signer=signer,
                    chain=reader,
                    state_dir=tmp_path / "state",
                    chain_names={31337: "anvil"},
                )
                return await body(ctx)
        finally:
            reader.close()

    return asyncio.run(main())


def test_wallet_balance_of_the_session_key(stack, anvil, tmp_path):
    key = stack.funded_session_key()

    async def body(ctx: ToolContext):
        native = await call(wallet_balance, ctx)
        unlisted = await call(wallet_balance, ctx, token=TOKEN.lower())
        with pytest.raises(ToolFailure, match="USDC is not an asset"):
            await call(wallet_balance, ctx, token="USDC")
        other = await call(wallet_balance, ctx, chain_id=1)
        assert other.content == (
            "No main account or active session key on chain 1 (the signer's policy does not list this chain)."
        )
        return native, unlisted

    native, unlisted = run(stack, anvil, tmp_path, body, scope=Scope.READ)
    wei = balance(anvil, key["address"])
    row = native.data["balances"][0]
    assert row["balance"] == str(wei) and row["key_id"] == key["key_id"] and not native.untrusted
    whole, frac = divmod(wei, 10**18)
    assert (
        f"session key {row['address']}: {whole}{'.' + str(frac).rjust(18, '0').rstrip('0') if frac else ''} ETH"
        in native.content
    )
    assert "base units" not in native.content and key["key_id"] not in native.content  # ids: in data only
    assert "on anvil (31337)" in native.content and row["address"] in native.content
    assert "a raw amount of 0 of token " + TOKEN in unlisted.content
    assert "not in the signer's asset list" in unlisted.content


def test_wallet_balance_uses_policy_symbol_and_decimals(make_stack, anvil, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "version: 1\nchains: [{id: 31337, name: anvil}]\n"
        "assets:\n  - {chain: 31337, asset: native, symbol: ETH, decimals: 18}\n"
        f"  - {{chain: 31337, asset: '{TOKEN}', symbol: TST, decimals: 6}}\n"
    )
    stack = make_stack(policy=policy).start()
    stack.funded_session_key()

    async def body(ctx: ToolContext):
        return await call(wallet_balance, ctx, token="tst"), await call(wallet_balance, ctx, token="no-such")

    with pytest.raises(ToolFailure, match="listed: ETH, TST"):
        run(stack, anvil, tmp_path, body, scope=Scope.READ)

    async def by_symbol(ctx: ToolContext):
        return await call(wallet_balance, ctx, token="tst")

    out = run(stack, anvil, tmp_path, by_symbol, scope=Scope.READ, name="bot2")
    assert ": 0 TST\n" in out.content and out.data["decimals"] == 6


def test_address_book_labels_both_sources(stack, anvil, tmp_path):
    async def body(ctx: ToolContext):
        ctx.provenance.saw_user_text(
            f"add {STRANGER}, {FRIEND} and 0x7099{'1' * 32}79c8"
        )  # the user typed them
        await call(contact_add, ctx, name="Carol", address=STRANGER.lower())
        await call(contact_add, ctx, name="Friend again", address=FRIEND)
        with pytest.raises(ToolFailure, match="signer book 'dev-friend'"):  # poisoning the signer's book
            await call(contact_add, ctx, name="Mallory", address="0x7099" + "1" * 32 + "79c8")
        return await call(address_book, ctx)

    out = run(stack, anvil, tmp_path, body, scope=Scope.READ)
    lines = out.content.splitlines()
    assert lines[0] == "Known to the signer (its policy address book):"
    assert lines[1] == f"- dev-friend: {FRIEND} on anvil (31337)"
    assert lines[2].startswith("Local contacts (local label only: the signer still treats")
    assert f"- Carol: {STRANGER}" in lines
    assert f"- Friend again: {FRIEND} (also in the signer's book as 'dev-friend')" in lines
    assert not out.untrusted  # the signer's own book: not content to fence


def _reverted_tx(anvil) -> str:
    """A mined, reverted transaction: contract creation whose init code is PUSH0 PUSH0 REVERT."""
    sender = rpc(anvil.url, "eth_accounts")[0]
    tx = {"from": sender, "data": "0x60006000fd", "gas": hex(100_000)}
    tx_hash = rpc(anvil.url, "eth_sendTransaction", [tx])
    wait_receipt(anvil, tx_hash)
    return tx_hash


def test_tx_status_by_request_and_by_hash(stack, anvil, tmp_path):
    stack.funded_session_key()
    reverted = _reverted_tx(anvil)

    async def body(ctx: ToolContext):
        signer = ctx.services.signer
        signed = await signer.sign({"chain_id": 31337, "to": FRIEND, "value": str(10**15)})
        assert signed.status is RequestStatus.SIGNED and signed.tx_hash, signed
        wait_receipt(anvil, signed.tx_hash)
        escalated = await signer.sign({"chain_id": 31337, "to": STRANGER, "value": str(10**15)})
        assert escalated.status is RequestStatus.PENDING, escalated
        return (
            as_json(signed),
            await call(tx_status, ctx, request_id=signed.request_id),
            await call(tx_status, ctx, request_id=escalated.request_id),
            await call(tx_status, ctx, request_id="req_" + "0" * 32),
            await call(tx_status, ctx, tx_hash=signed.tx_hash.upper().replace("0X", "0x")),
            await call(tx_status, ctx, tx_hash=reverted),
            await call(tx_status, ctx, tx_hash="0x" + "ab" * 32),
        )

    signed, by_id, pending, unknown, by_hash, bad, missing = run(stack, anvil, tmp_path, body)
    block = int(wait_receipt(anvil, signed["tx_hash"])["blockNumber"], 16)
    assert f"confirmed in block {block}" in by_id.content and by_id.data["block"] == block
    assert "dev-friend" in by_id.content and not by_id.untrusted
    assert "waiting for the user's approval" in pending.content
    assert pending.data["state"] == "pending_approval"
    assert "req_" not in by_id.content + pending.content + unknown.content  # the model quotes these words
    assert by_id.data["request_id"].startswith("req_")  # the id stays in the data
    assert unknown.data["state"] == "not_found"
    assert by_hash.content.endswith(f"confirmed in block {block}.") and by_hash.untrusted
    assert "reverted in block" in bad.content and bad.data["state"] == "reverted"
    assert "not found on chain 31337" in missing.content


def test_tx_status_pending_and_argument_rules(tmp_path):
    class MempoolOnly:  # a node that knows the transaction but has not mined it
        async def call(self, chain_id: int, method: str, *params: Any) -> Any:
            return {"hash": params[0], "blockNumber": None} if method == "eth_getTransactionByHash" else None

    ctx = make_ctx(tmp_path, chain=MempoolOnly())
    out = asyncio.run(call(tx_status, ctx, tx_hash="0x" + "cd" * 32))
    assert out.data["state"] == "pending"

    class FailedSigner:  # the signer's stored outcome quotes its RPC URL, API key included
        async def call_as(self, model: type, method: str, params: dict):
            return model.model_validate(
                {
                    "status": "failed",
                    "state": "failed",
                    "request_id": params["request_id"],
                    "error": "chain RPC unreachable (https://eth.example/v3/SECRETKEY): timeout",
                }
            )

    failing_ctx = make_ctx(tmp_path, signer=FailedSigner())
    failed = asyncio.run(call(tx_status, failing_ctx, request_id="req_" + "1" * 32))
    assert "failed, nothing was sent" in failed.content and "SECRETKEY" not in failed.content
    assert failed.untrusted
    for bad in (
        {},
        {"request_id": "req_" + "0" * 32, "tx_hash": "0x" + "00" * 32},
        {"request_id": "req_" + "0" * 32, "chain_id": 1},
        {"tx_hash": "0x1234"},
    ):
        with pytest.raises(ValueError):
            tx_status.args.model_validate(bad)


def test_chain_reader_refuses_unknown_chains_and_write_methods(anvil):
    reader = RpcChainReader({31337: anvil.url})

    async def main():
        assert int(await reader.call(31337, "eth_chainId"), 16) == 31337
        with pytest.raises(ChainReadError, match="chain 5 is not configured"):
            await reader.call(5, "eth_chainId")
        with pytest.raises(ChainReadError, match="not a read-only method"):
            await reader.call(31337, "eth_sendTransaction", {})

    asyncio.run(main())
    reader.close()
    secret_url = "http://127.0.0.1:1/v3/SECRETKEY"
    dead = RpcChainReader({1: secret_url}, timeout=1)
    with pytest.raises(ChainReadError) as failed:
        asyncio.run(dead.call(1, "eth_blockNumber"))
    assert "SECRETKEY" not in str(failed.value)
    dead.close()
