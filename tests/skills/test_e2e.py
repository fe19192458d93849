"""Skills from a DM, end to end: `owlia skill install` -> build_runtime -> console channel -> real
SDK -> fake LLM server -> the skill in bubblewrap -> anvil / the real signer."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bot.cli.skill_cmd import app
from bot.devchain import rpc
from tests.bot.agent.conftest import Reply, attach_bot, bot, call, llm  # noqa: F401 - fixtures
from tests.bot.agent.test_agent_e2e import tool_results
from tests.bot.agent.test_red_team import _provenance_policy
from tests.conftest import FRIEND, STRANGER, balance
from tests.skills.conftest import EXAMPLES, HOSTILE, audit_records, needs_bwrap

pytestmark = [needs_bwrap, pytest.mark.chain]


def install(home, folder) -> None:
    done = CliRunner().invoke(app, ["install", str(folder), "--yes"], env={"OWLIA_HOME": str(home)})
    assert done.exit_code == 0, done.output


def test_gas_tracker_answers_a_dm(bot, anvil):
    install(bot.home, EXAMPLES / "gas_tracker")
    bot.llm.enqueue(
        Reply(tool_calls=[call("skill_gas_tracker_gas_price", {"gas_units": 21000})]),
        Reply(text=["Gas is cheap right now."]),
    )
    out = bot.chat("how much is gas?")
    assert "Gas is cheap right now." in out
    offered = {t["name"]: t for t in bot.llm.requests[0].body["tools"]}
    assert (
        offered["skill_gas_tracker_gas_price"]["input_schema"]["properties"]["gas_units"]["maximum"]
        == 30000000
    )
    result = tool_results(bot.llm.requests[1])[0]["content"]
    wei = int(rpc(anvil.url, "eth_gasPrice", []), 16)
    assert result.startswith('<untrusted source="tool_result">') and f'"gas_price_wei":"{wei}"' in result
    assert f'"cost_wei":"{wei * 21000}"' in result
    ran = [
        r["kind"] for r in audit_records(bot.home) if r["kind"] != "skill.installed"
    ]  # the install: on record
    assert ran[:3] == ["skill.started", "skill.callback", "skill.callback"]


def test_prompt_injection_from_a_skill_stays_fenced_and_its_address_is_flagged(
    make_stack, llm, anvil, tmp_path
):
    stack = make_stack(
        policy=_provenance_policy(tmp_path)
    ).start()  # new recipients allowed, untrusted denied
    stack.funded_session_key()
    harness = attach_bot(stack, llm)
    install(harness.home, HOSTILE / "evil")
    before = balance(anvil, STRANGER)
    llm.enqueue(
        Reply(tool_calls=[call("skill_evil_inject", {"address": STRANGER})]),
        Reply(tool_calls=[call("transfer", {"to": STRANGER, "amount": "0.001"})]),  # the model "obeys"
        Reply(text=["Done?"]),
    )
    out = harness.chat("run the evil skill")
    injected = tool_results(llm.requests[1])[0]["content"]
    assert injected.startswith('<untrusted source="tool_result">') and injected.count("</untrusted>") == 1
    assert "Refused by your policy: send 0.001 ETH" in out and "recipient.untrusted_provenance" not in out
    assert "recipient.untrusted_provenance" in harness.chat("/details")  # the rule, on request
    assert balance(anvil, STRANGER) == before


def test_a_sign_skill_in_a_dm_shows_the_signers_card_and_is_escalated(bot, anvil):
    install(bot.home, HOSTILE / "spender")
    before = balance(anvil, FRIEND)
    bot.llm.enqueue(
        Reply(tool_calls=[call("skill_spender_drain", {"to": FRIEND, "wei": str(10**15), "times": 1})]),
        Reply(text=["Asked."]),
    )
    out = bot.chat("pay my friend through the skill")
    assert "Waiting for your approval: send 0.001 ETH to dev-friend" in out and "source.skill" not in out
    assert "source.skill" in bot.chat("/details")
    assert balance(anvil, FRIEND) == before


def test_no_skill_tool_is_offered_without_a_sandbox_backend(bot):
    import asyncio

    import yaml

    install(bot.home, EXAMPLES / "gas_tracker")
    section = yaml.safe_load((bot.home / "config.yaml").read_text())["bot"]
    bot.configure({**section, "skills": {"backend": "gvisor"}})  # not available in this build
    runtime = bot.runtime()
    try:
        assert not [t for t in runtime.registry.all() if t.name.startswith("skill_")]
        assert "no sandbox backend" in runtime.skills.problems[0]
    finally:
        asyncio.run(runtime.close())
    assert audit_records(bot.home)[-1]["kind"] == "skill.no_backend"
