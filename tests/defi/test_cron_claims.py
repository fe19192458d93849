"""A scheduled claim, run by the real scheduler (SchedulerService on the bot's runtime and cron.db) against
a real signer and a real merkle distributor on anvil: the tokens land in the claiming account.

The job runs the `claim` tool with its stored arguments, no model involved, in the SCHEDULED context
where `claim` is the only tool. The claim names the session key's own account (the tool builds it so,
and the signer denies any other: tests/defi/test_claims_anvil.py); the request is unattended, so the
policy's `sources.heartbeat` decides: `deny` (the default) refuses it, `policy` lets the claim rules
decide. A claim job the owner did not make (any row but `owlia cron add --claim`'s) is refused.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.config import CronSettings
from bot.devchain import rpc
from bot.runtime.scheduler import SchedulerService
from bot.scheduler.jobs import ClaimJob, Every, JobSpec
from bot.scheduler.store import JobStore
from policies.kernel.files import ensure_private_dir, write_private_file
from tests.bot.agent.conftest import attach_bot
from tests.bot.scheduler.conftest import Outbox, notifier_with
from tests.conftest import STRANGER, wait_receipt
from tests.defi.conftest import nonce, swap_policy, token_balance
from tests.defi.test_claims_anvil import airdrop, create_address
from tests.fakes.llm_server import FakeLLMServer

pytestmark = [pytest.mark.chain, pytest.mark.slow]
DROP = 7 * 10**18


def _setup(make_stack, chain, market, tmp_path, deployer_index: int, *, heartbeat: str):
    """A signer whose policy lists the distributor (deployed next by anvil account `deployer_index`),
    the airdrop for its session key and a stranger, the claims file in the workspace."""
    deployer = rpc(chain.url, "eth_accounts")[deployer_index].lower()
    first = nonce(chain.url, deployer)
    predicted_token, predicted = create_address(deployer, first), create_address(deployer, first + 1)
    policy = swap_policy(market, tmp_path)
    text = policy.read_text().replace("heartbeat: deny", f"heartbeat: {heartbeat}")
    policy.write_text(
        text + f'\nclaims:\n  distributors:\n    - {{chain: 31337, address: "{predicted}", '
        f'token: "{predicted_token}", name: test-airdrop}}\n'
    )
    stack = make_stack(chain.url, policy=policy).start()
    payer = stack.funded_session_key()["address"].lower()
    token, distributor, tree = airdrop(chain.url, deployer, [(payer, DROP), (STRANGER.lower(), 10**18)])
    assert (token, distributor) == (predicted_token, predicted)
    workspace = ensure_private_dir(stack.home / "workspace")
    write_private_file(workspace / "airdrop.json", json.dumps(tree).encode())
    return stack, payer, token


def _run_job(stack, server, *, origin: str = "cli") -> tuple[object, list[tuple[str, str]]]:
    """Add the claim job to the home's cron.db, then have the scheduler run it (`owlia cron run`)."""
    harness = attach_bot(stack, server)
    outbox = Outbox()

    async def go():
        runtime = harness.runtime()
        with JobStore(stack.home / "state") as store:
            job = store.add(
                JobSpec(
                    name="weekly airdrop",
                    schedule=Every(seconds=7 * 86400),
                    payload=ClaimJob(distributor="test-airdrop", proof="airdrop.json"),
                    target="telegram:55",
                ),
                owner="cli" if origin == "cli" else "telegram:55",
                origin=origin,
            )
        service = SchedulerService(runtime, notifier_with(outbox), CronSettings(), sync_interval=0.05)
        await service.start()
        with JobStore(stack.home / "state") as store:
            assert store.request_run(job.id)
        await outbox.wait_for(1, timeout=60)
        await service.drain()
        await service.stop()
        with JobStore(stack.home / "state") as store:
            [run] = store.history(job.id)
        await runtime.close()
        return run

    run = asyncio.run(asyncio.wait_for(go(), 120))
    return run, outbox.sent


def test_a_scheduled_claim_lands_the_tokens_in_the_claiming_account(make_stack, chain, market, tmp_path):
    stack, payer, token = _setup(make_stack, chain, market, tmp_path, 6, heartbeat="policy")
    with FakeLLMServer() as server:
        run, sent = _run_job(stack, server)
        assert server.requests == []  # no model was asked anything
    assert (run.status, run.trigger) == ("ok", "manual"), run
    assert run.detail.startswith("claim signed (tx 0x"), run.detail
    start, end = run.detail.split("(tx ")[1].split(")")[0].split("…")
    block = rpc(chain.url, "eth_getBlockByNumber", ["latest", True])
    [tx_hash] = [t["hash"] for t in block["transactions"] if t["from"].lower() == payer]
    assert tx_hash.startswith(start) and tx_hash.endswith(end)
    assert wait_receipt(chain, tx_hash)["status"] == "0x1"
    assert token_balance(chain.url, token, payer) == DROP
    assert token_balance(chain.url, token, STRANGER.lower()) == 0
    [(chat, text)] = sent
    assert chat == "55" and text.startswith("Scheduled claim (weekly airdrop):") and "claim" in text


def test_a_scheduled_claim_follows_sources_heartbeat_deny_by_default(make_stack, chain, market, tmp_path):
    stack, payer, token = _setup(make_stack, chain, market, tmp_path, 7, heartbeat="deny")
    sent_before = nonce(chain.url, payer)
    with FakeLLMServer() as server:
        run, sent = _run_job(stack, server)
    assert run.status == "error" and run.detail.startswith("claim denied"), run
    assert nonce(chain.url, payer) == sent_before and token_balance(chain.url, token, payer) == 0
    assert len(sent) == 1 and "Scheduled claim" in sent[0][1]


def test_a_claim_job_the_owner_did_not_make_is_refused(make_stack, chain, market, tmp_path):
    stack, payer, token = _setup(make_stack, chain, market, tmp_path, 8, heartbeat="policy")
    with FakeLLMServer() as server:
        run, sent = _run_job(stack, server, origin="agent")
    assert run.status == "error" and "must be made by the owner" in run.detail, run
    assert token_balance(chain.url, token, payer) == 0 and len(sent) == 1 and "refused" in sent[0][1]
