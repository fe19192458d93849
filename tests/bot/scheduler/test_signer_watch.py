"""SignerWatch against a real signer daemon (in-process, so its clock can be moved to expire a
request) and anvil: the sign tools' outcomes become notifications in the signer's own words."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from bot.config import load_bot_config
from bot.llm.types import ToolCall
from bot.runtime.assemble import build_runtime
from bot.runtime.signer_watch import SignerWatch
from bot.tools.base import ContextKind, ToolContext
from policies.kernel.files import ensure_private_dir, write_private_file
from signer.daemon import Daemon
from signer.wire.client import SignerClient
from signer.wire.exchange import new_idempotency_key
from signer.wire.replies import SessionKeyCreateReply
from tests.bot.readable import assert_readable
from tests.bot.scheduler.conftest import Outbox, notifier_with
from tests.conftest import FRIEND, PASSPHRASE, STRANGER


async def _funded(stack) -> None:
    async with SignerClient(stack.socket, stack.admin_token) as admin:
        created = await admin.call_as(
            SessionKeyCreateReply,
            "session_key.create",
            {"idempotency_key": new_idempotency_key("t"), "chain_id": 31337},
        )
        await admin.call(
            "session_key.topup",
            {"idempotency_key": new_idempotency_key("t"), "key_id": created.session_key.key_id},
        )


async def _sign(runtime, name: str, args: dict) -> str:
    ctx = ToolContext(
        "telegram:1", "telegram", "1", ContextKind.DM, runtime.services, run_id=f"r{time.time_ns()}"
    )
    [done] = await runtime.executor.execute(ctx, [ToolCall(f"c{time.time_ns()}", name, args)], None)
    return done.outcome


async def _until(outbox: Outbox, count: int, timeout: float = 10.0) -> list[str]:
    return [text for _, text in await outbox.wait_for(count, timeout)]


async def _eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


def test_outcomes_and_a_later_expiry_are_notified(make_stack):
    stack = make_stack()
    secrets = ensure_private_dir(stack.home / "secrets")
    write_private_file(secrets / "signer.token", stack.client_token("bot").encode())
    outbox = Outbox()

    async def go() -> list[str]:
        daemon = Daemon(stack.paths, stack.config, bytearray(PASSPHRASE))
        await daemon.start()
        runtime = build_runtime(stack.home, load_bot_config(stack.home))
        watch = SignerWatch(runtime, notifier_with(outbox), max_watched=1, first_delay=0.05, max_delay=0.2)
        try:
            await _funded(stack)
            await watch.start()
            assert await _sign(runtime, "transfer", {"to": FRIEND, "amount": "0.001"}) == "signed"
            await _until(outbox, 1)
            assert (
                await _sign(runtime, "contract_call", {"to": FRIEND, "data": "0x", "chain_id": 999})
                == "denied"
            )
            await _until(outbox, 2)
            assert await _sign(runtime, "transfer", {"to": STRANGER, "amount": "0.001"}) == "pending_approval"
            await _until(outbox, 3)
            assert len(watch.watching) == 1
            await _sign(runtime, "transfer", {"to": STRANGER, "amount": "0.002"})  # over the watch bound
            await _until(outbox, 5)
            await _eventually(
                lambda: outbox.sent[-1][1].startswith(
                    "1 requests are already being followed, so this one is not"
                )
            )
            daemon.engine.clock = lambda: time.time() + 100_000  # the companion never answered
            await _until(outbox, 6)
            await _eventually(lambda: watch.watching == [])  # the expired request is no longer followed
        finally:
            await watch.stop()
            await runtime.close()
            await daemon.stop()
        return [text for _, text in outbox.sent]

    texts = asyncio.run(asyncio.wait_for(go(), 40))
    signed, denied, waiting, second_waiting, not_followed, expired = texts
    # the words of the chat's cards, one prefix style, no ids: the same as a card in the chat
    assert signed.startswith("Signed and sent: send 0.001 ETH") and "\nTransaction 0x" in signed
    assert denied.startswith("Refused by your policy: ") and "Nothing was signed." in denied
    assert waiting.startswith("Waiting for your approval: send 0.001 ETH") and "companion app" in waiting
    assert second_waiting.startswith("Waiting for your approval: send 0.002 ETH")
    assert expired == next(t for t in texts if t.startswith("Expired without your approval"))
    assert "send 0.001 ETH" in expired and "nothing was signed" in expired  # the one followed
    assert_readable(*texts)
    assert {chat for chat, _ in outbox.sent} == {"100"}
