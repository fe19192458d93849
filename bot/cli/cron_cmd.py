"""`owlia cron`: list, add, remove and run scheduled jobs, and read their run history.

It edits `<home>/state/cron.db` directly; a running bot notices within seconds. `run` queues a run
for the running bot (which has the channels to deliver to) instead of running it here.
"""

from __future__ import annotations

import time
from typing import Optional

import typer

from bot.cli.config_file import load_or_fail
from policies.kernel.cli import fail, home_of, print_json

app = typer.Typer(
    help="Scheduled jobs: reminders, system events and unattended assistant runs.", no_args_is_help=True
)


def _store(ctx: typer.Context):
    from bot.scheduler.store import JobStore  # lazy: 73 ms, 15688 KiB

    return JobStore(home_of(ctx) / "state")


def _timezone(ctx: typer.Context) -> str:
    return load_or_fail(home_of(ctx)).bot.cron.timezone


@app.command("list")
def list_jobs(ctx: typer.Context) -> None:
    """Active jobs, with the next time each one fires."""
    from bot.scheduler.jobs import next_fire, utc_text  # lazy: 61 ms, 9988 KiB

    tz = _timezone(ctx)
    now = time.time()
    with _store(ctx) as store:
        jobs = store.active()
    rows = []
    for j in jobs:
        upcoming = next_fire(j.spec, j.created_at, tz, after=max(j.watermark, now))
        rows.append(
            {
                "id": j.id,
                "name": j.spec.name,
                "owner": j.owner,
                "origin": j.origin,
                "schedule": j.spec.describe_schedule(tz),
                "payload": j.spec.describe_payload(),
                "target": j.spec.target,
                "next": utc_text(upcoming) if upcoming else None,
            }
        )
    print_json(rows)


@app.command("add")
def add(
    ctx: typer.Context,
    at: Optional[str] = typer.Option(
        None, help="Once: ISO-8601 with offset, at most a year ahead, e.g. 2027-01-01T09:00+01:00."
    ),
    every: Optional[str] = typer.Option(None, help="Repeat: 90s, 15m, 2h, 1d (at least 1 minute)."),
    cron: Optional[str] = typer.Option(None, help="5-field crontab, e.g. '0 9 * * 1-5'."),
    tz: Optional[str] = typer.Option(None, "--tz", help="IANA zone for --cron (default: bot.cron.timezone)."),
    remind: Optional[str] = typer.Option(None, help="Payload: send this text as a reminder."),
    event: Optional[str] = typer.Option(None, help="Payload: a system event in the main chat."),
    agent: Optional[str] = typer.Option(None, help="Payload: the assistant runs this task (read tools)."),
    claim: Optional[str] = typer.Option(
        None, help="Payload: claim from this distributor (its name or address in the signer's policy)."
    ),
    proof: Optional[str] = typer.Option(
        None, help="With --claim: the claims file in the workspace, or an http(s) URL, holding the proof."
    ),
    chain_id: Optional[int] = typer.Option(
        None, "--chain", help="With --claim: the chain (default: the bot's)."
    ),
    target: Optional[str] = typer.Option(None, help="Where results go, e.g. telegram:123."),
    name: str = typer.Option("", help="A label."),
) -> None:
    """Add a job: one schedule (--at/--every/--cron) and one payload (--remind/--event/--agent/--claim)."""
    from pydantic import ValidationError  # lazy: 60 ms, 9972 KiB (2 imports)

    from bot.scheduler.jobs import (
        AgentTurn,
        ClaimJob,
        JobSpec,
        Reminder,
        SystemEvent,
        build_schedule,
        next_fire,
        parse_duration,
        utc_text,
    )

    default_tz = _timezone(ctx)
    payloads = [p for p in (remind, event, agent, claim) if p is not None]
    if len(payloads) != 1:
        fail("give exactly one payload: --remind, --event, --agent or --claim")
    if (claim is None) != (proof is None):
        fail("--claim and --proof go together: the distributor and where its proof is")
    try:
        schedule = build_schedule(at, parse_duration(every) if every is not None else None, cron)
        payload = (
            Reminder(text=remind)
            if remind is not None
            else SystemEvent(text=event)
            if event is not None
            else ClaimJob(distributor=claim, proof=proof or "", chain_id=chain_id)
            if claim is not None
            else AgentTurn(prompt=agent or "")
        )
        spec = JobSpec(name=name, schedule=schedule, payload=payload, target=target, timezone=tz)
        spec.check_window(time.time())
    except ValidationError as exc:
        fail(_first_error(exc))
    except ValueError as exc:
        fail(str(exc))
    with _store(ctx) as store:
        job = store.add(spec, owner="cli", origin="cli")
    upcoming = next_fire(spec, job.created_at, default_tz)
    typer.echo(
        f"added {job.id}: {spec.describe_schedule(default_tz)}, first "
        f"{utc_text(upcoming) if upcoming else 'never'}"
    )


def _first_error(exc) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


@app.command("rm")
def remove(ctx: typer.Context, job_id: str = typer.Argument(..., help="From `owlia cron list`.")) -> None:
    """Remove a job (its history stays)."""
    with _store(ctx) as store:
        if not store.remove(job_id):
            fail(f"no active job {job_id}")
    typer.echo(f"removed {job_id}")


@app.command("run")
def run_now(
    ctx: typer.Context,
    job_id: str = typer.Argument(...),
    wait: float = typer.Option(
        0.0, min=0, help="Wait up to this many seconds for the running bot to finish it."
    ),
) -> None:
    """Queue one run now for the running bot (its schedule is unchanged)."""
    from bot.runtime.instance import running  # lazy: 1 ms, 1140 KiB

    with _store(ctx) as store:
        before = {r.id for r in store.history(job_id, limit=1000)}
        if not store.request_run(job_id):
            fail(f"no active job {job_id}")
        if running(home_of(ctx)):
            typer.echo(f"queued a run of {job_id}; the running bot picks it up within seconds")
        else:
            typer.echo(
                f"queued a run of {job_id}; no bot is running on {home_of(ctx)}, so it runs when "
                "`owlia start` starts",
                err=True,
            )
            if wait:
                fail("nothing will run it within --wait: start the bot (`owlia start`) first")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            done = [
                r
                for r in store.history(job_id, limit=20)
                if r.id not in before and r.trigger == "manual" and r.status != "running"
            ]
            if done:
                print_json(done[0].as_dict())
                if done[0].status != "ok":
                    raise typer.Exit(1)
                return
            time.sleep(0.1)
    if wait:
        fail(f"no result within {wait:g}s (is the bot running?)")


@app.command("history")
def history(
    ctx: typer.Context,
    job_id: Optional[str] = typer.Argument(None, help="A job id, or `heartbeat`; default: all."),
    n: int = typer.Option(20, "-n", min=1, help="How many runs."),
) -> None:
    """Recent runs, newest first: status (ok, error, missed, skipped, interrupted), when, why."""
    with _store(ctx) as store:
        print_json([r.as_dict() for r in store.history(job_id, limit=n)])
