"""SQLite FTS5 index over the workspace's memory notes, reindexed incrementally.

Files are tracked by (mtime_ns, size, sha256) so a reindex only reads what changed and only
re-chunks what really differs; deleted notes leave the index. The DB is 0600: it holds note text.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from bot.memory.chunking import chunk_markdown
from bot.memory.query import to_fts_query
from policies.kernel.files import open_private_db, read_regular_text

MEMORY_FILE = "MEMORY.md"
MEMORY_DIR = "memory"
MAX_NOTE_BYTES = 1024 * 1024  # a note this big is not a note: indexing 20 MiB held every message for minutes

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, sha256 TEXT);
CREATE TABLE IF NOT EXISTS chunk_owner (chunk_rowid INTEGER PRIMARY KEY, path TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunk_owner_path ON chunk_owner (path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(
    text, path UNINDEXED, start_line UNINDEXED, end_line UNINDEXED, tokenize='unicode61'
);
"""


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    snippet: str
    score: float  # higher is better (negated bm25)


@dataclass(frozen=True)
class ReindexStats:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0


def memory_files(workspace: Path) -> dict[str, Path]:
    """MEMORY.md plus memory/**/*.md as workspace-relative POSIX paths; symlinks and escapes skipped."""
    root = Path(workspace)
    found: dict[str, Path] = {}
    candidates = [root / MEMORY_FILE]
    mem_dir = root / MEMORY_DIR
    if mem_dir.is_dir() and not mem_dir.is_symlink():
        for dirpath, dirnames, filenames in os.walk(mem_dir):  # os.walk does not follow dir symlinks
            dirnames.sort()
            candidates.extend(Path(dirpath) / name for name in sorted(filenames) if name.endswith(".md"))
    real_root = os.path.realpath(root)
    for path in candidates:
        if path.is_file() and not path.is_symlink() and _within_real(path, real_root):
            found[path.relative_to(root).as_posix()] = path
    return found


def _within_real(path: Path, real_root: str) -> bool:
    real = os.path.realpath(path)
    return os.path.commonpath([real, real_root]) == real_root


class MemoryIndex:
    """Search index for one workspace; call `reindex()` before searching fresh notes."""

    def __init__(self, workspace: Path, db_path: Path) -> None:
        self.workspace = Path(workspace)
        self._too_big: set[str] = set()
        self.conn = open_private_db(db_path, schema=_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reindex(self) -> ReindexStats:
        """Bring the index in line with the notes on disk in one transaction.

        Other processes on the home (`owlia start`, `owlia chat`) reindex the same DB: the write lock
        is taken first (BEGIN IMMEDIATE, waiting out another reindex) and what is indexed is read
        under it. Read before it, a second reindex indexed again every note the first had just added
        (each found twice by search); a deferred BEGIN failed with "database is locked" on upgrade.
        """
        current = {
            rel: path for rel, path in memory_files(self.workspace).items() if self._indexable(rel, path)
        }
        added = updated = unchanged = 0
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            rows = self.conn.execute("SELECT path, mtime_ns, size, sha256 FROM files")
            known = {row[0]: row[1:] for row in rows}
            for rel, path in current.items():
                info = path.stat()
                old = known.get(rel)
                if old is not None and (old[0], old[1]) == (info.st_mtime_ns, info.st_size):
                    unchanged += 1
                    continue
                text = read_regular_text(path)
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                if old is not None and old[2] == digest:
                    unchanged += 1
                else:
                    self._replace_chunks(rel, text, existed=old is not None)
                    added, updated = (added + 1, updated) if old is None else (added, updated + 1)
                self.conn.execute(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                    (rel, info.st_mtime_ns, info.st_size, digest),
                )
            removed = [rel for rel in known if rel not in current]
            for rel in removed:
                self._drop_chunks(rel)
                self.conn.execute("DELETE FROM files WHERE path = ?", (rel,))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return ReindexStats(added=added, updated=updated, removed=len(removed), unchanged=unchanged)

    def _indexable(self, rel: str, path: Path) -> bool:
        """False for a note over MAX_NOTE_BYTES: left out of search (said once per process), never cut."""
        size = path.stat().st_size
        if size <= MAX_NOTE_BYTES:
            return True
        if rel not in self._too_big:
            self._too_big.add(rel)
            log.warning(
                "memory note %s is %d bytes, over %d: search leaves it out; split it into smaller notes",
                path,
                size,
                MAX_NOTE_BYTES,
            )
        return False

    def _drop_chunks(self, rel: str) -> None:
        """Delete by rowid via chunk_owner: `path` is UNINDEXED in FTS5, so a WHERE on it scans everything."""
        self.conn.execute(
            "DELETE FROM chunks WHERE rowid IN (SELECT chunk_rowid FROM chunk_owner WHERE path = ?)", (rel,)
        )
        self.conn.execute("DELETE FROM chunk_owner WHERE path = ?", (rel,))

    def _replace_chunks(self, rel: str, text: str, existed: bool) -> None:
        if existed:
            self._drop_chunks(rel)
        for c in chunk_markdown(text):
            cur = self.conn.execute(
                "INSERT INTO chunks (text, path, start_line, end_line) VALUES (?, ?, ?, ?)",
                (c.text, rel, c.start_line, c.end_line),
            )
            self.conn.execute("INSERT INTO chunk_owner VALUES (?, ?)", (cur.lastrowid, rel))

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        """BM25-ranked chunks for a free-text query; an empty or operator-only query finds nothing."""
        fts = to_fts_query(query)
        if fts is None or limit <= 0:
            return []
        rows = self.conn.execute(
            "SELECT path, start_line, end_line, snippet(chunks, 0, '[', ']', '…', 24), bm25(chunks) "
            "FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT ?",
            (fts, min(limit, 50)),
        ).fetchall()
        return [Hit(path=r[0], start_line=r[1], end_line=r[2], snippet=r[3], score=-r[4]) for r in rows]
