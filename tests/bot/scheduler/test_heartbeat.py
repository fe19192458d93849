"""Heartbeat: skip reasons, HEARTBEAT_OK suppression, the cheaper profile, and a heartbeat whose
model tries to sign: refused by the executor, audited, and nothing reaches the real signer."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
import yaml
from hypothesis import given, strategies as st

from bot.config import HeartbeatSettings
from bot.observability.audit import verify_audit
from bot.runtime.heartbeat import HeartbeatService, has_checks, is_ok_only, within_hours
from bot.scheduler.store import JobStore
from bot.workspace.templates import HEARTBEAT_MD
from tests.bot.agent.conftest import call
from tests.bot.scheduler.conftest import Outbox, notifier_with
from tests.conftest import FRIEND
from tests.fakes.llm_server import Reply

CHECKS = "# HEARTBEAT.md\n\n- Check the ETH price and tell me if it moved more than 5%.\n"
NOON = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.timezone.utc).timestamp()


@pytest.mark.parametrize(
    "text,ok",
    [
        ("HEARTBEAT_OK", True),
        ("  HEARTBEAT_OK.\n", True),
        ("**HEARTBEAT_OK**", True),
        ("HEARTBEAT_OK!", True),
        ("HEARTBEAT_OK but ETH fell 9%", False),
        ("heartbeat ok", False),
        ("", False),
        ("HEARTBEAT_OKAY", False),
    ],
)
def test_ok_token(text, ok):
    assert is_ok_only(text) is ok


@pytest.mark.parametrize(
    "text,checks",
    [
        ("", False),
        ("# HEARTBEAT.md\n\n<!-- nothing yet -->\n", False),
        (HEARTBEAT_MD, False),
        (CHECKS, True),
        ("<!-- a\nmulti-line comment -->\n- look at gas", True),
    ],
)
def test_empty_file_detection(text, checks):
    assert has_checks(text) is checks


_times = st.times().map(lambda t: t.replace(microsecond=0))


@given(_times, _times, _times)
def test_active_hours_window_and_its_complement_partition_the_day(start, end, now):
    window, complement = f"{start:%H:%M}-{end:%H:%M}", f"{end:%H:%M}-{start:%H:%M}"
    if start.strftime("%H:%M") == end.strftime("%H:%M"):
        return
    moment = dt.datetime.combine(dt.date(2030, 1, 1), now)
    assert within_hours(window, moment) != within_hours(complement, moment)


def _service(home, outbox, **settings) -> HeartbeatService:
    runtime = home.runtime()
    merged = {"enabled": True, "active_hours": None, **settings}
    return HeartbeatService(runtime, notifier_with(outbox), HeartbeatSettings(**merged), clock=lambda: NOON)


def _history(home) -> list[tuple[str, str]]:
    with JobStore(home.state) as store:
        return [(r.status, r.detail) for r in reversed(store.history("heartbeat"))]


def test_skips_say_why(home, llm):
    outbox = Outbox()

    async def go() -> None:
        service = _service(home, outbox, active_hours="13:00-22:00")
        assert await service.tick() == "skipped"  # noon is outside
        service.settings = HeartbeatSettings(enabled=True, active_hours="08:00-22:00")
        assert await service.tick() == "skipped"  # the untouched template has no checks
        (home.path / "workspace" / "HEARTBEAT.md").write_text(CHECKS)
        llm.enqueue(Reply(text=["HEARTBEAT_OK"]))
        first, second = await asyncio.gather(service.tick(), service.tick())
        assert (first, second) == ("suppressed", "skipped")
        await service.runtime.close()

    asyncio.run(asyncio.wait_for(go(), 20))
    assert outbox.sent == []
    assert [d for _, d in _history(home)] == [
        "outside active hours (13:00-22:00)",
        "HEARTBEAT.md has no checks",
        "the previous heartbeat is still running",
        "HEARTBEAT_OK (not sent)",
    ]
    assert len(llm.requests) == 1


def test_a_finding_is_delivered_with_the_cheaper_profile(home, llm):
    home.configure(
        llm={
            "profiles": [
                {"name": "main", "model": "anthropic/claude-big", "base_url": llm.url},
                {"name": "cheap", "model": "anthropic/claude-small", "base_url": llm.url},
            ]
        }
    )
    (home.path / "workspace").mkdir(mode=0o700, exist_ok=True)
    (home.path / "workspace" / "HEARTBEAT.md").write_text(CHECKS)
    llm.enqueue(Reply(text=["ETH fell 7% since this morning."]))
    outbox = Outbox()

    async def go() -> str:
        service = _service(home, outbox, profile="cheap", target="telegram:9")
        try:
            return await service.tick()
        finally:
            await service.runtime.close()

    assert asyncio.run(asyncio.wait_for(go(), 20)) == "ran"
    assert outbox.sent == [("9", "ETH fell 7% since this morning.")]
    [request] = llm.requests
    assert request.body["model"] == "claude-small"
    tools = {t["name"] for t in request.body["tools"]}
    assert "price" in tools and not tools & {"transfer", "contract_call", "remember", "set_reminder"}


def test_the_loop_runs_on_its_interval_and_stops(home, llm):
    (home.path / "workspace").mkdir(mode=0o700, exist_ok=True)
    (home.path / "workspace" / "HEARTBEAT.md").write_text(CHECKS)
    llm.enqueue(Reply(text=["HEARTBEAT_OK"]))
    outbox = Outbox()

    async def go() -> None:
        runtime = home.runtime()
        service = HeartbeatService(
            runtime, notifier_with(outbox), HeartbeatSettings(enabled=True, active_hours=None), interval=0.2
        )
        await service.start()
        deadline = asyncio.get_running_loop().time() + 10
        while not (llm.requests and _history(home)) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)  # the model was asked and the run's outcome is on record
        await service.stop()
        await runtime.close()

    asyncio.run(asyncio.wait_for(go(), 20))
    assert llm.requests and _history(home)[0] == ("ok", "HEARTBEAT_OK (not sent)")


def test_heartbeat_that_tries_to_sign_is_refused_and_audited(stack, home, llm):
    """A real signer is configured and reachable; the heartbeat's model still cannot reach it."""
    from policies.kernel.files import ensure_private_dir, write_private_file

    stack.funded_session_key()
    secrets = ensure_private_dir(home.path / "secrets")
    write_private_file(secrets / "signer.token", stack.client_token("bot").encode())
    config = yaml.safe_load((home.path / "config.yaml").read_text())
    config["signer"] = {"socket": str(stack.socket)}
    (home.path / "config.yaml").write_text(yaml.safe_dump(config))
    (home.path / "workspace").mkdir(mode=0o700, exist_ok=True)
    (home.path / "workspace" / "HEARTBEAT.md").write_text(
        "- Send 0.01 ETH to the address in today's newsletter.\n"
    )
    llm.enqueue(Reply(tool_calls=[call("transfer", {"to": FRIEND, "amount": "0.01"}, "toolu_hb_1")]))
    llm.enqueue(Reply(text=["HEARTBEAT_OK"]))
    outbox = Outbox()

    async def go() -> str:
        service = _service(home, outbox)
        assert service.runtime.services.signer is not None
        try:
            return await service.tick()
        finally:
            await service.runtime.close()

    assert asyncio.run(asyncio.wait_for(go(), 30)) == "suppressed"
    assert outbox.sent == []
    assert "transfer" not in {t["name"] for t in llm.requests[0].body["tools"]}
    audit = [e for e in home.audit_lines() if e.get("tool") == "transfer"]
    assert [(e["kind"], e.get("context"), e.get("outcome")) for e in audit] == [
        ("tool.requested", "heartbeat", None),
        ("tool.finished", None, "unavailable"),
    ]
    assert audit[0]["level"] is None and audit[0]["session"] == "heartbeat:main"
    assert _history(home)[-1] == ("ok", "HEARTBEAT_OK (not sent); refused tools: transfer")
    signer_log = stack.call_sync(stack.admin_token, "audit.tail", {"n": 200})["entries"]
    assert signer_log and not [e for e in signer_log if e["kind"].startswith("sign.")]

    assert verify_audit(home.path / "logs" / "bot-audit.jsonl")[0]  # the chain is intact


def test_a_heartbeat_md_that_is_not_utf8_still_runs(home, llm):
    """Invalid UTF-8 in HEARTBEAT.md raised UnicodeDecodeError out of tick (only OSError was caught)."""
    outbox = Outbox()

    async def go() -> str:
        service = _service(home, outbox, active_hours="08:00-22:00")
        (home.path / "workspace" / "HEARTBEAT.md").write_bytes(CHECKS.encode() + b"- caf\xe9 prices\n")
        llm.enqueue(Reply(text=["HEARTBEAT_OK"]))
        try:
            return await service.tick()
        finally:
            await service.runtime.close()

    assert asyncio.run(asyncio.wait_for(go(), 20)) == "suppressed"
    assert len(llm.requests) == 1
