"""Group commit: one writer thread turns every unit of work queued meanwhile into one fsync.

Under concurrency the event loop keeps deciding and signing while the writer waits on the disk,
and sixteen requests cost about one fsync instead of sixteen. Each unit runs in its own
savepoint, so one failing unit rolls back alone and its caller alone gets the error.

With a single request in flight there is nothing to group: handing the unit to the thread and
waking the loop again costs two thread switches (hundreds of microseconds on a busy two-CPU
machine) for nothing, so a caller that knows it is alone may ask for `inline=True`. The unit then
commits on the calling thread, if and only if the writer thread is idle with nothing queued, so
units still commit in the order they were submitted. The loop is blocked for that one fsync,
which delays only requests that were not there yet.

WAL checkpoints run on their own thread (signer.store.checkpoint), not inside a request's COMMIT.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from signer.store.checkpoint import BACKSTOP_PAGES, DEFAULT_EVERY, Checkpointer, database_file

T = TypeVar("T")
log = logging.getLogger("owlia.signer.store")
_STOP = object()
MAX_BATCH = 256


class WriterClosed(RuntimeError):
    pass


class Writer:
    """Serializes every write to the signer store; `run` is called from one event loop."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        before_commit: Callable[[], None] | None = None,
        on_commit: Callable[[], None] | None = None,
        on_inline_commit: Callable[[], None] | None = None,
        on_rollback: Callable[[], None] | None = None,
        checkpoint_every: int | None = DEFAULT_EVERY,
    ) -> None:
        """`checkpoint_every`: commits between background WAL checkpoints; None leaves them to SQLite.
        `before_commit` runs inside each transaction right before its COMMIT (the state head binds
        there; if it raises, the transaction rolls back and every unit in it fails); `on_commit` runs after each commit; `on_inline_commit`, if given, instead of it after a commit
        made on the caller's thread (the event loop)."""
        self._conn = conn
        self._before_commit = before_commit
        self._on_commit = on_commit
        self._on_inline_commit = on_inline_commit or on_commit
        self._inline_now = False  # a commit under way on the caller's thread (set under the lock)
        self._on_rollback = on_rollback
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        # Whoever holds the lock owns the connection: the thread for a batch, or the loop inline.
        self._lock = threading.Lock()
        # Units handed to the thread, and units it has finished. Each counter has one writer
        # (the loop, the thread), so reading the other's under the GIL needs no lock.
        self._submitted = 0
        self._finished = 0
        # What happened, for tests and benchmarks; written only by whoever holds the lock.
        self.commits = 0  # transactions committed
        self.units_committed = 0
        self.inline_commits = 0  # of those, committed on the caller's thread
        self._checkpointer: Checkpointer | None = None
        path = database_file(conn) if checkpoint_every else None
        if path is not None and checkpoint_every:
            conn.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
            self._checkpointer = Checkpointer(path, every=checkpoint_every)
        self._thread = threading.Thread(target=self._run, name="signer-writer", daemon=True)
        self._thread.start()

    async def run(self, unit: Callable[[sqlite3.Connection], T], *, inline: bool = False) -> T:
        """Run `unit` inside the next batch; returns once the batch is durably committed.

        `inline=True`: commit right here, on the caller's thread, when the writer is idle.
        """
        if self._closed:
            raise WriterClosed("the signer store is closed")
        if inline and self._submitted == self._finished and self._lock.acquire(blocking=False):
            self._inline_now = True
            try:
                ok, value = self._commit([unit])[0]
                self.inline_commits += ok
            finally:
                self._inline_now = False
                self._lock.release()
            if ok:
                return cast(T, value)  # what `unit` returned
            raise value
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._submitted += 1
        self._queue.put((unit, loop, future))
        return await future

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join(timeout=30)
            if self._checkpointer is not None:
                self._checkpointer.close()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            batch = [item]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP:
                    stop = True
                    break
                batch.append(nxt)
            with self._lock:
                results = self._commit([unit for unit, _, _ in batch])
                self._finished += len(batch)
            for (_, loop, future), (ok, value) in zip(batch, results):
                loop.call_soon_threadsafe(_settle, future, ok, value)
            if stop:
                return

    def _commit(self, units: list[Callable[[sqlite3.Connection], Any]]) -> list[tuple[bool, Any]]:
        """One transaction for all `units`; (ok, result or exception) for each. Caller holds the lock."""
        results: list[tuple[bool, Any]] = []
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            if (
                len(units) == 1
            ):  # alone in its transaction: a failure rolls back the whole, no savepoint needed
                return [self._commit_one(conn, units[0])]
            for unit in units:
                conn.execute("SAVEPOINT unit")
                try:
                    results.append((True, unit(conn)))
                    conn.execute("RELEASE unit")
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    conn.execute("ROLLBACK TO unit")
                    conn.execute("RELEASE unit")
                    if self._on_rollback:
                        self._on_rollback()
                    results.append((False, exc))
            self._finish(conn, sum(ok for ok, _ in results))
        except BaseException as exc:  # noqa: BLE001 - a failed commit fails every unit: fail closed
            self._rollback(conn)
            results = [(False, _commit_failed(exc))] * len(units)
        return results

    def _commit_one(
        self, conn: sqlite3.Connection, unit: Callable[[sqlite3.Connection], Any]
    ) -> tuple[bool, Any]:
        """The rest of a one-unit transaction (BEGIN already ran): its own error, or a commit failure."""
        try:
            value = unit(conn)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self._rollback(conn)
            return False, exc
        try:
            self._finish(conn, 1)
        except BaseException as exc:  # noqa: BLE001 - fail closed
            self._rollback(conn)
            return False, _commit_failed(exc)
        return True, value

    def _finish(self, conn: sqlite3.Connection, units: int) -> None:
        if self._before_commit is not None:
            self._before_commit()
        conn.execute("COMMIT")
        self.commits += 1
        self.units_committed += units
        if self._checkpointer is not None:
            self._checkpointer.committed()
        hook = self._on_inline_commit if self._inline_now else self._on_commit
        if hook:
            try:
                hook()
            except Exception:  # committed is committed: the units must not be told otherwise
                log.exception("after-commit hook failed")

    def _rollback(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        if self._on_rollback:
            self._on_rollback()


def _commit_failed(exc: BaseException) -> WriterClosed:
    return WriterClosed(f"could not commit to the signer store: {exc}")


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
