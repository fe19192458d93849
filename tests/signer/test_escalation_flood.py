"""A hijacked bot cannot bury the user in approval prompts: ten of one client's may wait at once."""

from __future__ import annotations

import asyncio
import json

import pytest

from signer.tier1.approvals import MAX_WAITING_PER_CLIENT
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from tests.conftest import STRANGER

pytestmark = pytest.mark.chain


def test_a_client_may_have_only_so_many_requests_waiting_for_the_companion(stack):
    stack.funded_session_key()
    bot, other = stack.client_token("bot"), stack.client_token("other-bot")

    def escalate(token: str) -> dict:  # a new recipient: the dev policy asks the companion
        return stack.call_sync(
            token,
            "sign.request",
            {
                "idempotency_key": new_idempotency_key(),
                "intent": {"chain_id": 31337, "to": STRANGER, "value": "1"},
            },
        )

    replies = [escalate(bot) for _ in range(MAX_WAITING_PER_CLIENT + 2)]
    assert [r["status"] for r in replies] == ["pending_approval"] * MAX_WAITING_PER_CLIENT + ["denied"] * 2
    assert replies[-1]["rule_id"] == "approvals.too_many_waiting"
    assert "waiting for your companion" in replies[-1]["reason"]
    assert escalate(other)["status"] == "pending_approval"  # each client has its own share
    verified = stack.owlia("audit", "verify")
    assert verified.returncode == 0, verified.stdout  # the policy's own answer (escalate) replays
    assert json.loads(verified.stdout)["replay_mismatches"] == []


def test_the_cap_holds_for_escalations_that_arrive_together(stack):
    token = stack.client_token("bot")

    async def burst() -> list[dict]:
        clients = [SignerClient(stack.socket, token) for _ in range(8)]
        for client in clients:
            await client.connect()
        try:
            return await asyncio.gather(
                *(clients[i % 8].sign({"chain_id": 31337, "to": STRANGER, "value": "1"}) for i in range(25))
            )
        finally:
            for client in clients:
                await client.close()

    statuses = [r.status for r in asyncio.run(burst())]
    assert statuses.count("pending_approval") == MAX_WAITING_PER_CLIENT
    assert statuses.count("denied") == 25 - MAX_WAITING_PER_CLIENT
