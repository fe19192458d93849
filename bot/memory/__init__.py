"""Long-term memory: notes in the workspace, an FTS5 index over them, and confined read/append."""

from bot.memory.access import NoteText, daily_note, memory_get, remember, resolve_memory_path
from bot.memory.bench import bench_search
from bot.memory.chunking import Chunk, chunk_markdown
from bot.memory.index import Hit, MemoryIndex, ReindexStats, memory_files
from bot.memory.query import to_fts_query

__all__ = [
    "Chunk",
    "Hit",
    "MemoryIndex",
    "NoteText",
    "ReindexStats",
    "bench_search",
    "chunk_markdown",
    "daily_note",
    "memory_files",
    "memory_get",
    "remember",
    "resolve_memory_path",
    "to_fts_query",
]
