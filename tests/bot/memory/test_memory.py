"""Memory index, confined note access, remember, and the search latency budget."""

from __future__ import annotations

import os
import sqlite3
import stat
from datetime import date

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bot.memory import (
    MemoryIndex,
    bench_search,
    chunk_markdown,
    daily_note,
    memory_get,
    remember,
    to_fts_query,
)
from policies.kernel.files import PathNotAllowed


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "memory" / "sub").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Facts\n\nThe user's cold wallet is a Ledger.\n")
    (root / "memory" / "2026-11-01.md").write_text(
        "# Nov 1\n\nSwapped USDC to ETH on base.\n\nGas was high.\n"
    )
    (root / "memory" / "sub" / "friends.md").write_text("Alice is the dev-friend.\nBob owes 5 USDC.\n")
    (root / "memory" / "skip.txt").write_text("ledger ledger ledger")
    return root


@pytest.fixture
def index(ws, tmp_path):
    with MemoryIndex(ws, tmp_path / "db" / "memory.sqlite") as idx:
        yield idx


def test_chunks_follow_headings_and_cover_lines():
    text = "# A\n\npara one\n\n# B\n\n" + "\n".join(f"line {i} " + "x" * 90 for i in range(20))
    chunks = chunk_markdown(text)
    assert chunks[0].text.startswith("# A") and "para one" in chunks[0].text and "# B" not in chunks[0].text
    assert chunks[1].start_line == 5
    assert all(len(c.text) <= 800 for c in chunks)
    assert chunks[-1].end_line == len(text.splitlines())
    lines = text.splitlines()
    for c in chunks:
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])


def test_index_db_is_private_and_search_ranks(index, tmp_path):
    stats = index.reindex()
    assert stats.added == 3 and stats.unchanged == 0
    assert stat.S_IMODE(os.stat(tmp_path / "db" / "memory.sqlite").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "db").st_mode) == 0o700
    hits = index.search("ledger wallet")
    assert hits[0].path == "MEMORY.md" and hits[0].start_line == 1 and hits[0].end_line == 3
    assert "[Ledger]" in hits[0].snippet or "[wallet]" in hits[0].snippet
    assert all(h.path != "memory/skip.txt" for h in index.search("ledger"))
    gas = index.search("gas")
    assert gas[0].path == "memory/2026-11-01.md" and gas[0].score > 0
    assert [h.path for h in index.search("Bob USDC", limit=1)] == ["memory/sub/friends.md"]


def test_incremental_reindex(index, ws):
    index.reindex()
    assert index.reindex().unchanged == 3
    note = ws / "memory" / "sub" / "friends.md"
    note.write_text("Carol is new.\n")
    os.utime(ws / "MEMORY.md", ns=(1, 1))  # touched, same bytes: re-hashed, not re-chunked
    (ws / "memory" / "2026-11-01.md").unlink()
    stats = index.reindex()
    assert (stats.added, stats.updated, stats.removed, stats.unchanged) == (0, 1, 1, 1)
    assert index.search("Bob") == [] and index.search("gas") == []
    assert index.search("Carol")[0].path == "memory/sub/friends.md"
    count = index.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert count == index.conn.execute("SELECT count(*) FROM chunk_owner").fetchone()[0] == 2


def test_index_skips_symlinked_notes(index, ws, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("seed phrase zebra")
    (ws / "memory" / "leak.md").symlink_to(secret)
    index.reindex()
    assert index.search("zebra") == []


def test_operator_queries_do_not_raise(index):
    index.reindex()
    for q in ['"', "AND OR NOT", "NEAR(a b)", "*", "path:MEMORY", "^x", "", "  ", 'a"b', "(((", "-"]:
        index.search(q)
    assert to_fts_query("NEAR(ledger wallet)") == '"NEAR" OR "ledger" OR "wallet"'
    assert to_fts_query('" * ( )') is None


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text())
def test_any_text_query_never_raises(index, query):
    index.search(query)
    fts = to_fts_query(query)
    if fts is not None:  # the sanitized form itself is valid FTS5, not rescued by a try/except
        index.conn.execute("SELECT count(*) FROM chunks WHERE chunks MATCH ?", (fts,)).fetchone()


def test_memory_get_lines_and_cap(ws):
    got = memory_get(ws, "memory/2026-11-01.md", start_line=3, end_line=3)
    assert got.text == "Swapped USDC to ETH on base." and (got.start_line, got.end_line) == (3, 3)
    whole = memory_get(ws, "MEMORY.md", max_chars=5)
    assert whole.text == "# Fac" and whole.truncated
    assert memory_get(ws, "memory/sub/friends.md", start_line=50).text == ""


@pytest.mark.parametrize(
    "path",
    [
        "../secret.md",
        "memory/../../secret.md",
        "memory/../SOUL.md",
        "SOUL.md",
        "/etc/passwd.md",
        "memory/skip.txt",
        "",
        "memory\\x.md",
        "memory/a\x00.md",
        "memory",
    ],
)
def test_memory_get_rejects_bad_paths(ws, path):
    with pytest.raises(PathNotAllowed):
        memory_get(ws, path)


def test_memory_get_rejects_symlinks_outside(ws, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("KEY")
    (ws / "memory" / "evil.md").symlink_to(secret)
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    (outside_dir / "x.md").write_text("KEY")
    (ws / "memory" / "linkdir").symlink_to(outside_dir)
    for path in ["memory/evil.md", "memory/linkdir/x.md"]:
        with pytest.raises(PathNotAllowed):
            memory_get(ws, path)


def test_memory_get_rejects_symlinked_memory_dir(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "a.md").write_text("KEY")
    (ws / "memory").symlink_to(outside)
    with pytest.raises(PathNotAllowed):
        memory_get(ws, "memory/a.md")


def test_remember_appends_paragraphs(ws):
    remember(ws, "  Prefers base for swaps.  ")
    remember(ws, "Limit is 100 USDC a day.")
    text = (ws / "MEMORY.md").read_text()
    assert text.endswith("Ledger.\n\nPrefers base for swaps.\n\nLimit is 100 USDC a day.\n")
    note = daily_note(date(2026, 11, 23))
    assert remember(ws, "Met Carol.", note) == "memory/2026-11-23.md"
    path = ws / "memory" / "2026-11-23.md"
    assert path.read_text() == "Met Carol.\n" and stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "note", ["SOUL.md", "memory/x.md", "../MEMORY.md", "memory/2026-11-23.md/../../a.md"]
)
def test_remember_rejects_other_notes(ws, note):
    with pytest.raises(PathNotAllowed):
        remember(ws, "x", note)


def test_remember_rejects_empty_and_symlink(ws, tmp_path):
    with pytest.raises(ValueError):
        remember(ws, "   ")
    target = tmp_path / "victim"
    target.write_text("")
    (ws / "memory" / "2026-01-01.md").symlink_to(target)
    with pytest.raises(PathNotAllowed):
        remember(ws, "x", "memory/2026-01-01.md")
    assert target.read_text() == ""


def test_db_symlink_refused(ws, tmp_path):
    (tmp_path / "real.sqlite").write_bytes(b"")
    (tmp_path / "link.sqlite").symlink_to(tmp_path / "real.sqlite")
    with pytest.raises((PathNotAllowed, OSError)):
        MemoryIndex(ws, tmp_path / "link.sqlite")


def test_search_p50_within_budget():
    result = bench_search(10_000, queries=100)
    print(f"memory search: {result}")
    # A regression guard, not the benchmark: CI machines are shared, so allow 3x the 10 ms target
    # (bench/agent_bench.py measures the real number for docs/benchmarks.md).
    assert result["p50_ms"] <= 30.0
    assert result["index_s"] < 60


def test_sqlite_has_fts5():
    sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x)")
