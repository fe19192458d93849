"""WAL checkpoints off the request path.

SQLite checkpoints inside COMMIT once the WAL passes `wal_autocheckpoint` pages: the request that
crosses the line pays for copying the WAL into the database and the database's own fsync. Here a
thread with its own connection runs a PASSIVE checkpoint every `every` commits instead, and the
writer's automatic checkpoint stays only as a backstop (BACKSTOP_PAGES) should this thread fall
behind. PASSIVE never blocks the writer. Once a checkpoint has caught up, the next write
transaction restarts the WAL from its beginning, so the file is overwritten in place and does not
grow (appending to a growing file costs each fsync a metadata update as well).

Durability is SQLite's: frames are copied into the database and the database is fsync'd before
the WAL may be reused; a crash mid-checkpoint leaves the WAL to be replayed.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from signer.store.db import connect

log = logging.getLogger("owlia.signer.store")
BACKSTOP_PAGES = 8000  # ~32 MB of WAL: only reached if the checkpoint thread cannot keep up
DEFAULT_EVERY = 32  # commits between checkpoints (~300 WAL pages for a Tier 2 request's ~9)
CHASE_COMMITS = 8  # after catching up, look for the restart at this many commits at most


def database_file(conn: sqlite3.Connection) -> Path | None:
    """The file behind `conn`'s main database in WAL mode, or None (in memory, other journal)."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    if not path or conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        return None
    return Path(path)


class Checkpointer:
    """Runs PASSIVE checkpoints on its own thread and connection when told enough was committed.

    The WAL restarts from its beginning only at a write transaction that *began* after a
    checkpoint had copied every frame; a commit already under way when the checkpoint catches up
    appends instead. So after catching up, the thread checks again at each of the next few commits
    (a short pass copies the frames that slipped in) until it sees the WAL restarted.

    No PASSIVE pass can force a restart: while every pass (two fsyncs) outlasts the gap between
    commits, as on a loaded disk, each commit begins before the pass ends, so the chase runs out
    and the WAL grows until the commits leave a gap, bounded by the backstop.
    """

    def __init__(self, path: Path, *, every: int = DEFAULT_EVERY) -> None:
        self._conn = connect(path)
        self._every = every
        self._commits = 0  # touched only by whoever holds the writer's lock
        self._chasing = 0  # commits left in which to see the restart after catching up
        self._caught_up_at = 0  # WAL frames when the last pass copied them all
        self._wake = threading.Event()
        self._closed = False
        self.passes = 0
        self.restarts = 0
        self._thread = threading.Thread(target=self._run, name="signer-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """Count one commit; the caller holds the writer's lock, so no two calls race."""
        self._commits += 1
        if self._chasing or self._commits >= self._every:
            self._commits = 0
            self._wake.set()

    def _run(self) -> None:
        while not self._closed:  # checked before waiting too: a pass may clear close()'s wake-up
            self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            try:
                self._pass()
            except sqlite3.Error as exc:  # the writer's backstop checkpoint still bounds the WAL
                self._chasing = 0
                log.warning("background WAL checkpoint failed: %s", exc)

    def _pass(self) -> None:
        _busy, frames, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.passes += 1
        if self._chasing and frames < self._caught_up_at:
            self.restarts += 1
            self._chasing = 0  # restarted: back to one pass every `every` commits
            self._wake.clear()  # a wake-up set for the chase is stale now
        elif self._chasing:
            self._chasing -= 1  # bounded: a reader holding an old snapshot cannot keep this going
            if frames == copied:
                self._caught_up_at = frames
        elif frames == copied:
            self._chasing, self._caught_up_at = CHASE_COMMITS, frames

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._wake.set()
            self._thread.join(timeout=30)
            self._conn.close()
