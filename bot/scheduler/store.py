"""cron.db (0600, in the 0700 state dir): job definitions as JSON, each job's watermark, run history.

Our own tables instead of APScheduler's SQLAlchemy store, which pickles jobs: loading a pickle is
code execution, and this file is writable by the bot. The bot, the tools and `owlia cron` open it
concurrently (busy timeout, short IMMEDIATE transactions); the running scheduler notices changes by
`PRAGMA data_version`. History keeps the last HISTORY_PER_JOB runs per job and never the output
text, only where it went.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from bot.scheduler.jobs import JobSpec
from bot.security.redact import redact
from policies.kernel.files import open_private_db

log = logging.getLogger(__name__)
CRON_DB = "cron.db"
MAX_JOBS_PER_OWNER = 100
HISTORY_PER_JOB = 200
ACTIVE, DONE, REMOVED = "active", "done", "removed"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('cli', 'agent')),
    spec TEXT NOT NULL,
    created_at REAL NOT NULL,
    watermark REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'done', 'removed'))
);
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs (owner, state);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'catchup', 'manual', 'heartbeat')),
    scheduled_at REAL,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'error', 'missed', 'skipped', 'interrupted')),
    fires INTEGER NOT NULL DEFAULT 1,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS runs_job ON runs (job_id, id);
CREATE TABLE IF NOT EXISTS run_requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    requested_at REAL NOT NULL
);
"""


class JobLimit(Exception):
    """The owner already has as many active jobs as allowed."""


@dataclass(frozen=True)
class Job:
    id: str
    owner: str  # the session that created it ("cli" for `owlia cron`)
    origin: str  # "cli" | "agent": an agent-made job's text is untrusted when it runs
    spec: JobSpec
    created_at: float
    watermark: float  # every fire at or before this time has been handled
    state: str


@dataclass(frozen=True)
class Run:
    id: int
    job_id: str
    trigger: str
    scheduled_at: float | None
    started_at: float
    finished_at: float | None
    status: str
    fires: int
    detail: str

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def _job(row: tuple) -> Job | None:
    """A row as a Job; None (logged) if its definition no longer validates: one bad or tampered row
    must not stop every other job, and it never runs in a form we did not validate."""
    try:
        return Job(row[0], row[1], row[2], JobSpec.model_validate_json(row[3]), row[4], row[5], row[6])
    except ValidationError:
        log.warning("cron job %s has an invalid definition; it is ignored", row[0])
        return None


_JOB_COLUMNS = "id, owner, origin, spec, created_at, watermark, state"
_RUN_COLUMNS = "id, job_id, trigger, scheduled_at, started_at, finished_at, status, fires, detail"


class JobStore:
    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / CRON_DB
        self.conn = open_private_db(self.path, timeout=10.0, schema=_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def data_version(self) -> int:
        """Changes whenever another connection commits (another process, a tool, the CLI)."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    # ---- jobs -------------------------------------------------------------------------------

    def add(self, spec: JobSpec, *, owner: str, origin: str, now: float | None = None) -> Job:
        created = time.time() if now is None else now
        job_id = "j" + secrets.token_hex(4)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            (count,) = self.conn.execute(
                "SELECT COUNT(*) FROM jobs WHERE owner=? AND state=?", (owner, ACTIVE)
            ).fetchone()
            if count >= MAX_JOBS_PER_OWNER:
                raise JobLimit(f"{count} scheduled jobs are already active here; that is the limit")
            self.conn.execute(
                f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (job_id, owner, origin, spec.model_dump_json(), created, created, ACTIVE),
            )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return Job(job_id, owner, origin, spec, created, created, ACTIVE)

    def get(self, job_id: str) -> Job | None:
        row = self.conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=?", (job_id,)).fetchone()
        return _job(row) if row else None

    def active(self, owner: str | None = None) -> list[Job]:
        if owner is None:
            rows = self.conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE state=? ORDER BY created_at, id", (ACTIVE,)
            ).fetchall()
        else:
            rows = self.conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE state=? AND owner=? ORDER BY created_at, id",
                (ACTIVE, owner),
            ).fetchall()
        return [job for job in map(_job, rows) if job is not None]

    def remove(self, job_id: str, owner: str | None = None) -> bool:
        """Deactivate (history stays); with `owner`, only that owner's job."""
        sql, params = "UPDATE jobs SET state=? WHERE id=? AND state=?", [REMOVED, job_id, ACTIVE]
        if owner is not None:
            sql += " AND owner=?"
            params.append(owner)
        return self.conn.execute(sql, params).rowcount == 1

    def advance(self, job_id: str, watermark: float, *, finished: bool = False) -> bool:
        """Move the watermark forward (never back); False if the job is no longer active."""
        cur = self.conn.execute(
            "UPDATE jobs SET watermark=MAX(watermark, ?), state=? WHERE id=? AND state=?",
            (watermark, DONE if finished else ACTIVE, job_id, ACTIVE),
        )
        return cur.rowcount == 1

    # ---- history ----------------------------------------------------------------------------

    def start_run(
        self,
        job_id: str,
        trigger: str,
        scheduled_at: float | None,
        *,
        fires: int = 1,
        status: str = "running",
        detail: str = "",
        now: float | None = None,
    ) -> int:
        started = time.time() if now is None else now
        finished = None if status == "running" else started
        cur = self.conn.execute(
            "INSERT INTO runs (job_id, trigger, scheduled_at, started_at, finished_at, status, fires, "
            "detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (job_id, trigger, scheduled_at, started, finished, status, fires, redact(detail)[:500]),
        )
        self._prune(job_id)
        return int(cur.lastrowid or 0)

    def finish_run(self, run_id: int, status: str, detail: str = "", now: float | None = None) -> None:
        self.conn.execute(
            "UPDATE runs SET status=?, finished_at=?, detail=? WHERE id=? AND status='running'",
            (status, time.time() if now is None else now, redact(detail)[:500], run_id),
        )

    def interrupt_running(self, now: float | None = None) -> int:
        """Runs left `running` by a crash: never re-run (they may have had effects), only recorded."""
        return self.conn.execute(
            "UPDATE runs SET status='interrupted', finished_at=?, "
            "detail='the bot stopped during this run; it is not repeated' "
            "WHERE status='running'",
            (time.time() if now is None else now,),
        ).rowcount

    def history(self, job_id: str | None = None, limit: int = 20) -> list[Run]:
        if job_id is None:
            rows = self.conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = self.conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE job_id=? ORDER BY id DESC LIMIT ?", (job_id, limit)
            )
        return [Run(*r) for r in rows.fetchall()]

    def _prune(self, job_id: str) -> None:
        self.conn.execute(
            "DELETE FROM runs WHERE job_id=? AND id <= (SELECT id FROM runs WHERE job_id=? "
            "ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (job_id, job_id, HISTORY_PER_JOB),
        )

    # ---- manual runs ------------------------------------------------------------------------

    def request_run(self, job_id: str, now: float | None = None) -> bool:
        job = self.get(job_id)
        if job is None or job.state != ACTIVE:
            return False
        self.conn.execute(
            "INSERT INTO run_requests (job_id, requested_at) VALUES (?, ?)",
            (job_id, time.time() if now is None else now),
        )
        return True

    def take_run_requests(self) -> list[str]:
        """Queued `owlia cron run` requests, removed as they are taken (each runs once)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            rows = self.conn.execute("SELECT id, job_id FROM run_requests ORDER BY id").fetchall()
            self.conn.execute("DELETE FROM run_requests")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return [job_id for _, job_id in rows]
