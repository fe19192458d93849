"""Group commit: one writer thread turns every unit of work queued meanwhile into one fsync.

Under concurrency the event loop keeps deciding and signing while the writer waits on the disk,
and sixteen requests cost about one fsync instead of sixteen. Each unit runs in its own
savepoint, so one failing unit rolls back alone and its caller alone gets the error.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_STOP = object()
MAX_BATCH = 256


class WriterClosed(RuntimeError):
    pass


class Writer:
    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        on_commit: Callable[[], None] | None = None,
        on_rollback: Callable[[], None] | None = None,
    ) -> None:
        self._conn = conn
        self._on_commit = on_commit
        self._on_rollback = on_rollback
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="signer-writer", daemon=True)
        self._thread.start()

    async def run(self, unit: Callable[[sqlite3.Connection], T]) -> T:
        """Run `unit` inside the next batch; returns once the batch is durably committed."""
        if self._closed:
            raise WriterClosed("the signer store is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((unit, loop, future))
        return await future

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            batch = [item]
            while len(batch) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP:
                    self._commit(batch)
                    return
                batch.append(nxt)
            self._commit(batch)

    def _commit(self, batch: list[tuple[Callable, asyncio.AbstractEventLoop, asyncio.Future]]) -> None:
        results: list[tuple[bool, Any]] = []
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            for unit, _, _ in batch:
                conn.execute("SAVEPOINT unit")
                try:
                    results.append((True, unit(conn)))
                    conn.execute("RELEASE unit")
                except BaseException as exc:  # noqa: BLE001 - handed to the caller's future
                    conn.execute("ROLLBACK TO unit")
                    conn.execute("RELEASE unit")
                    if self._on_rollback:
                        self._on_rollback()
                    results.append((False, exc))
            conn.execute("COMMIT")
            if self._on_commit:
                self._on_commit()
        except BaseException as exc:  # noqa: BLE001 - a failed commit fails every unit: fail closed
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if self._on_rollback:
                self._on_rollback()
            results = [(False, WriterClosed(f"could not commit to the signer store: {exc}"))] * len(batch)
        for (_, loop, future), (ok, value) in zip(batch, results):
            loop.call_soon_threadsafe(_settle, future, ok, value)


def _settle(future: asyncio.Future, ok: bool, value: Any) -> None:
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
