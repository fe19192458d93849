"""memory.db is shared by every process on a home (`owlia start`, `owlia chat`): their reindexes
may run at once and must leave each note indexed exactly once."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from bot.memory.index import MemoryIndex
from tests.processes import race

REPO = Path(__file__).resolve().parents[3]

CHILD = """
import sys
from pathlib import Path
from bot.memory.index import MemoryIndex

workspace, db = Path(sys.argv[1]), Path(sys.argv[2])
with MemoryIndex(workspace, db) as index:
    print("ready", flush=True)
    sys.stdin.readline()
    index.reindex()
"""


def _notes(workspace: Path, count: int) -> None:
    notes = workspace / "memory"
    notes.mkdir(parents=True)
    for i in range(count):
        (notes / f"n{i:04d}.md").write_text(f"# note {i}\n\nthe owl number {i} likes wallets\n" * 4)


def test_concurrent_reindexes_index_each_note_once(tmp_path: Path):
    workspace, db = tmp_path / "workspace", tmp_path / "state" / "memory.db"
    _notes(workspace, 300)
    done = race([[sys.executable, "-c", CHILD, str(workspace), str(db)] for _ in range(3)], cwd=REPO)
    assert [code for code, _, _ in done] == [0] * 3, "\n".join(err for _, _, err in done)

    with MemoryIndex(workspace, tmp_path / "alone.db") as alone:  # the same notes indexed by one process
        alone.reindex()
        expected = alone.conn.execute("SELECT count(*) FROM chunk_owner").fetchone()[0]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM chunk_owner").fetchone()[0] == expected, (
            "notes indexed twice"
        )
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == expected
    finally:
        conn.close()
    with MemoryIndex(workspace, db) as index:
        hits = index.search("owl number 7 likes wallets", limit=5)
        assert len({(h.path, h.start_line) for h in hits}) == len(hits), "the same note found twice"
