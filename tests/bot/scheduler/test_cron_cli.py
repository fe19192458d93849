"""`owlia cron` through typer's CliRunner on the real cron.db, with a running scheduler in another
thread picking up what the CLI wrote (as the bot process would)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import time

from typer.testing import CliRunner

from bot.cli.cron_cmd import app
from bot.config import CronSettings
from bot.runtime.scheduler import SchedulerService
from tests.bot.scheduler.conftest import Outbox, notifier_with

runner = CliRunner()


def owlia(home, *args: str):
    return runner.invoke(app, list(args), env={"OWLIA_HOME": str(home.path)})


def test_add_list_rm_and_history(home):
    soon = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=2)).replace(microsecond=0).isoformat()
    added = owlia(home, "add", "--at", soon, "--remind", "renew the domain", "--target", "telegram:5")
    assert added.exit_code == 0, added.output
    job_id = added.output.split()[1].rstrip(":")
    weekly = owlia(
        home,
        "add",
        "--cron",
        "0 9 * * 1",
        "--tz",
        "Asia/Tokyo",
        "--agent",
        "weekly summary",
        "--name",
        "weekly",
    )
    assert weekly.exit_code == 0 and "cron '0 9 * * 1' (Asia/Tokyo)" in weekly.output
    listed = json.loads(owlia(home, "list").output)
    assert [j["id"] for j in listed][0] == job_id and listed[0]["target"] == "telegram:5"
    assert listed[1]["name"] == "weekly" and listed[1]["next"].endswith("00:00 UTC")  # 09:00 Tokyo
    assert owlia(home, "rm", job_id).exit_code == 0
    assert owlia(home, "rm", job_id).exit_code == 1
    assert [j["name"] for j in json.loads(owlia(home, "list").output)] == ["weekly"]
    assert json.loads(owlia(home, "history").output) == []


def test_bad_input_is_refused_with_a_reason(home):
    cases = [
        (["add", "--every", "30s", "--remind", "x"], "greater than or equal to 60"),
        (["add", "--every", "5m", "--cron", "* * * * *", "--remind", "x"], "exactly one schedule"),
        (["add", "--every", "5m"], "exactly one payload"),
        (["add", "--at", "2030-01-01T09:00", "--remind", "x"], "timezone"),
        (["add", "--at", "2001-01-01T09:00Z", "--remind", "x"], "in the past"),
        (["add", "--every", "5m", "--remind", "x", "--target", "nowhere"], "target"),
        (["add", "--every", "soon", "--remind", "x"], "bad duration"),
        (["run", "jdeadbeef"], "no active job"),
    ]
    for args, reason in cases:
        result = owlia(home, *args)
        assert result.exit_code != 0 and reason in result.output, (args, result.output)
    assert json.loads(owlia(home, "list").output) == []


def test_run_is_picked_up_by_the_running_bot(home):
    outbox = Outbox()
    ready, stop = threading.Event(), threading.Event()

    def bot() -> None:  # as `owlia start` runs it: holding the home's instance lock
        async def go() -> None:
            from bot.runtime.instance import single_instance

            with single_instance(home.path):
                await serve()

        async def serve() -> None:
            runtime = home.runtime()
            service = SchedulerService(runtime, notifier_with(outbox), CronSettings(), sync_interval=0.05)
            await service.start()
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)
            await service.drain()
            await service.stop()
            await runtime.close()

        asyncio.run(go())

    added = owlia(home, "add", "--every", "1d", "--remind", "water the plants")
    job_id = added.output.split()[1].rstrip(":")
    thread = threading.Thread(target=bot)
    thread.start()
    try:
        assert ready.wait(10)
        started = time.monotonic()
        result = owlia(home, "run", job_id, "--wait", "10")
        assert result.exit_code == 0, result.output
        assert time.monotonic() - started < 5
    finally:
        stop.set()
        thread.join(15)
    run = json.loads(result.output[result.output.index("{") :])
    assert (run["status"], run["trigger"], run["job_id"]) == ("ok", "manual", job_id)
    assert outbox.sent == [("100", "⏰ Reminder: water the plants")]
    assert json.loads(owlia(home, "history", job_id).output)[0]["id"] == run["id"]


def test_a_claim_job_from_the_cli_stores_its_arguments_and_needs_its_proof(home):
    added = owlia(home, "add", "--every", "7d", "--claim", "test-airdrop", "--proof", "airdrop.json")
    assert added.exit_code == 0, added.output
    [job] = json.loads(owlia(home, "list").output)
    assert job["payload"] == (
        "claim from test-airdrop with the proof in airdrop.json (the signer decides; the tokens go only "
        "to the claiming account)"
    )
    from bot.scheduler.jobs import ClaimJob
    from bot.scheduler.store import JobStore

    with JobStore(home.state) as store:
        [stored] = store.active()
    assert stored.origin == "cli" and stored.spec.payload == ClaimJob(
        distributor="test-airdrop", proof="airdrop.json"
    )
    for args, expected in (
        (["add", "--every", "7d", "--claim", "test-airdrop"], "--claim and --proof go together"),
        (["add", "--every", "7d", "--claim", "x", "--proof", "a b.json"], "no spaces"),
        (["add", "--every", "7d", "--claim", "x", "--proof", "p", "--remind", "y"], "exactly one payload"),
    ):
        refused = owlia(home, *args)
        assert refused.exit_code != 0 and expected in refused.output, (args, refused.output)
