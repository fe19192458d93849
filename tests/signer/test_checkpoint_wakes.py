"""How the writer wakes the checkpoint thread (signer.store.checkpoint): cheaply, boundedly, never lost.

Every commit may ask for a pass (one in `every`, or each one while a restart is being chased). The
asks collapse: however many come while a pass runs, at most one waits in the queue, and an ask
that comes after the thread took the last one is answered by a pass of its own.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from signer.store.checkpoint import Checkpointer
from signer.store.db import connect


def _db(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    return conn


def _wait_for(predicate, timeout: float = 10.0) -> bool:  # noqa: ANN001 - a callable returning bool
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def test_asks_for_a_pass_never_pile_up_while_passes_run(tmp_path):
    path = tmp_path / "w.db"
    conn = _db(path)
    checkpointer = Checkpointer(path, every=1)  # every commit asks for a pass
    try:
        deepest = 0
        for i in range(5000):
            if i % 50 == 0:
                conn.execute("INSERT INTO t(body) VALUES(?)", ("x" * 3000,))  # something to copy now and then
            checkpointer.committed()
            deepest = max(deepest, checkpointer._wake.qsize())
        assert deepest <= 1, deepest  # one waiting ask at most, however slow the passes
        assert _wait_for(lambda: checkpointer._wake.qsize() == 0)
    finally:
        checkpointer.close()
        conn.close()
    assert not checkpointer._thread.is_alive()


def test_an_ask_after_the_thread_went_idle_gets_its_own_pass(tmp_path):
    path = tmp_path / "w.db"
    conn = _db(path)
    checkpointer = Checkpointer(path, every=1)
    try:
        for _ in range(20):
            before = checkpointer.passes
            assert _wait_for(lambda: checkpointer._wake.qsize() == 0 and not checkpointer._wake_queued)
            conn.execute("INSERT INTO t(body) VALUES(?)", ("y" * 3000,))
            checkpointer.committed()
            assert _wait_for(lambda: checkpointer.passes > before), "an ask was lost: no pass followed it"
    finally:
        checkpointer.close()
        conn.close()
