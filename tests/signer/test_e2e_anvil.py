"""The signer on a real chain: limits under concurrency, kill -9, idempotency, the CLI path."""

from __future__ import annotations

import asyncio
import json

import pytest

from signer.tier1.approvals import MAX_WAITING_PER_CLIENT
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from tests.conftest import FRIEND, STRANGER, as_json, balance, reverter_policy, wait_receipt

pytestmark = [pytest.mark.chain, pytest.mark.slow]
CENT = 10**16  # 0.01 ETH: the dev policy's per-transaction limit; its 24 h limit is 0.05 ETH


def transfer(to: str = FRIEND, value: int = CENT) -> dict:
    return {"chain_id": 31337, "to": to, "value": str(value)}


async def _burst(stack, token: str, n: int, clients: int) -> list[dict]:
    conns = [SignerClient(stack.socket, token) for _ in range(clients)]
    for c in conns:
        await c.connect()
    try:
        return [
            as_json(r)
            for r in await asyncio.gather(
                *(conns[i % clients].sign(transfer(), idempotency_key=f"burst-{i:04d}") for i in range(n))
            )
        ]
    finally:
        for c in conns:
            await c.close()


def test_twenty_concurrent_requests_sign_exactly_five_then_survive_kill9(stack, anvil):
    key = stack.funded_session_key()
    token = stack.client_token("bot")
    before = balance(anvil, FRIEND)
    nonce_before = anvil_nonce(anvil, key["address"])

    results = asyncio.run(_burst(stack, token, 20, clients=20))

    signed = [r for r in results if r["status"] == "signed"]
    refused = [r for r in results if r["status"] != "signed"]
    assert len(signed) == 5, [r.get("rule_id") for r in results]
    assert len(refused) == 15
    waiting = [r for r in refused if r["status"] == "pending_approval"]
    assert len(waiting) == MAX_WAITING_PER_CLIENT  # over the window: the companion is asked, up to its cap
    for r in waiting:
        assert r["rule_id"] == "limit.window.24h" and "24h" in r["reason"], r
    for r in refused:  # every refusal names its rule: the window, or too many already waiting
        assert r["rule_id"] in ("limit.window.24h", "approvals.too_many_waiting"), r
        assert any(f["rule_id"] == "limit.window.24h" for f in r["decision"]["findings"])  # and why
    for r in signed:
        assert wait_receipt(anvil, r["tx_hash"])["status"] == "0x1"
    assert balance(anvil, FRIEND) - before == 5 * CENT
    assert anvil_nonce(anvil, key["address"]) == nonce_before + 5

    # kill -9: no shutdown hook runs; the durable ledger must still hold the window shut.
    stack.kill9()
    stack.start()
    fresh = stack.client_token("bot-2")  # nothing of its own waiting: only the window can stop it
    after_restart = stack.call_sync(
        fresh, "sign.request", {"idempotency_key": new_idempotency_key(), "intent": transfer()}
    )
    assert after_restart["status"] != "signed" and after_restart["rule_id"] == "limit.window.24h"

    # Replaying an idempotency key returns the first outcome and signs nothing new.
    first = signed[0]
    replay_key = next(f"burst-{i:04d}" for i, r in enumerate(results) if r is first)
    again = stack.call_sync(token, "sign.request", {"idempotency_key": replay_key, "intent": transfer()})
    assert again["replayed"] is True and again["tx_hash"] == first["tx_hash"]
    assert anvil_nonce(anvil, key["address"]) == nonce_before + 5
    assert balance(anvil, FRIEND) - before == 5 * CENT

    # The same key for a different request is refused outright.
    conflict = stack.owlia(
        "sign",
        "send",
        "--to",
        FRIEND,
        "--value",
        "0.002eth",
        "--idempotency-key",
        replay_key,
        env=_env(token),
    )
    assert conflict.returncode == 1 and "idempotency key was already used" in conflict.stdout

    stack.stop()
    verified = stack.owlia("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["ok"] and report["replay_mismatches"] == []


def anvil_nonce(anvil, address: str) -> int:
    from bot.devchain import rpc

    return int(rpc(anvil.url, "eth_getTransactionCount", [address, "latest"]), 16)


def _env(token: str) -> dict:
    import os

    return {**os.environ, "OWLIA_SIGNER_TOKEN": token}


def test_sign_send_exit_codes(stack, anvil):
    stack.funded_session_key()
    env = _env(stack.client_token("cli"))
    before = balance(anvil, FRIEND)

    ok = stack.owlia("sign", "send", "--to", FRIEND, "--value", "0.001eth", env=env)
    assert ok.returncode == 0, ok.stderr
    body = json.loads(ok.stdout)
    assert body["status"] == "signed" and body["tx_hash"].startswith("0x")
    assert "dev-friend" in body["summary"]
    wait_receipt(anvil, body["tx_hash"])
    assert balance(anvil, FRIEND) - before == 10**15

    pending = stack.owlia("sign", "send", "--to", STRANGER, "--value", "0.001eth", env=env)
    assert pending.returncode == 3, pending.stderr
    body = json.loads(pending.stdout)
    assert body["status"] == "pending_approval" and body["rule_id"] == "recipient.new" and body["request_id"]
    polled = stack.call_sync(env["OWLIA_SIGNER_TOKEN"], "sign.status", {"request_id": body["request_id"]})
    assert polled["status"] == "pending_approval"

    denied = stack.owlia("sign", "send", "--to", FRIEND, "--value", "0.001eth", "--chain", "5", env=env)
    assert denied.returncode == 4, denied.stderr
    assert json.loads(denied.stdout)["status"] == "denied"

    bad = stack.owlia("sign", "send", "--to", FRIEND, "--value", "0.1.2eth", env=env)
    assert bad.returncode == 1 and "amount" in bad.stderr

    # one grammar with /send in chat: a bare number is refused, never taken as wei
    bare = stack.owlia("sign", "send", "--to", FRIEND, "--value", "5", env=env)
    assert bare.returncode == 1 and "has no unit" in bare.stderr and "0.001eth" in bare.stderr
    exponent = stack.owlia("sign", "send", "--to", FRIEND, "--value", "1e999eth", env=env)
    assert exponent.returncode == 1 and "exponents are not accepted" in exponent.stderr


def test_reverting_call_is_denied_with_the_revert_reason(make_stack, anvil, tmp_path):
    """An allowed call the chain would revert is never signed: the signer simulates first."""
    contract, policy = reverter_policy(anvil, tmp_path)
    assert contract.lower() in policy.read_text().lower()
    stack = make_stack(policy=policy).start()
    key = stack.funded_session_key()
    token = stack.client_token("bot")
    nonce = anvil_nonce(anvil, key["address"])
    result = stack.call_sync(
        token,
        "sign.request",
        {
            "idempotency_key": new_idempotency_key(),
            "intent": {"chain_id": 31337, "to": contract, "value": "0", "data": "0x12345678"},
        },
    )
    assert result["status"] == "denied" and result["rule_id"] == "simulation.reverted", result
    assert anvil_nonce(anvil, key["address"]) == nonce
