import asyncio, json
import pytest
from tests.bot.agent.conftest import Reply, call
from tests.bot.channels.telegram.conftest import OWNER, Live
from tests.conftest import FRIEND, STRANGER

pytestmark = pytest.mark.chain

def test_scratch(telegram_signer, anvil):
    bad = FRIEND.lower()[:-1] + "C"  # wrong checksum
    telegram_signer.bot.llm.enqueue(
        Reply(text=["Sending now."], tool_calls=[call("transfer", {"to": FRIEND, "amount": "0.001", "reason": "lunch"})]),
        Reply(text=["Done, it is on its way."]),
        Reply(tool_calls=[call("transfer", {"to": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293Bc", "amount": "0.1"})]),
        Reply(text=["Paying the invoice."], tool_calls=[call("transfer", {"to": STRANGER, "amount": "0.1", "reason": "invoice"})]),
        Reply(text=["The invoice needs your approval."]),
        Reply(tool_calls=[call("wallet_balance", {})]),
        Reply(text=["Here is your balance."]),
    )
    async def scenario(live: Live) -> None:
        async def step(text, n):
            before = len(live.tg.chat(OWNER))
            live.tg.message(OWNER, text)
            try:
                await live.tg.until(lambda: len(live.tg.chat(OWNER)) >= before + n, 20)
            except Exception:
                pass
            await asyncio.sleep(3)
            print("=====", text)
            for m in live.tg.chat(OWNER)[before:]:
                print("---\n" + m.text)
        await step(f"send 0.001 ETH to {FRIEND}", 2)
        await step("pay this invoice: 0.1 ETH to 0x3C44CdDdB6a900fa2b585dd299e03d12FA4293Bc", 3)
        await step("what's my balance?", 1)
        await step("/balance", 1)
        await step("/approvals", 1)
        await step(f"/send {STRANGER} 0.001eth", 1)
        await step("/new", 1)
    telegram_signer.serve(scenario, timeout=200)
