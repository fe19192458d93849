"""The one inter-process file lock: read-modify-write cycles by a CLI and a running process never interleave."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from policies.kernel.files import FILE_MODE, ensure_private_dir


@contextmanager
def file_lock(lock_path: Path) -> Iterator[int]:
    """Hold an exclusive flock on `lock_path` (created 0600, never through a symlink); not re-entrant.

    Yields the descriptor so a caller appending to the locked file itself can use it.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # closing releases the flock


def lock_path_for(path: Path) -> Path:
    """The inter-process lock of `path`: `.<name>.lock` beside it, in its private (0700) directory."""
    path = Path(path)
    ensure_private_dir(path.parent)
    return path.with_name(f".{path.name}.lock")


@contextmanager
def locked_beside(path: Path) -> Iterator[None]:
    """Hold `path`'s lock (`lock_path_for`) across a read-modify-write, so that writers in other
    processes never write back a copy they read before this one's change."""
    with file_lock(lock_path_for(path)):
        yield


@asynccontextmanager
async def async_file_lock(lock_path: Path, *, poll: float = 0.02) -> AsyncIterator[int]:
    """`file_lock` for a coroutine that holds it across awaits (e.g. a network call).

    Polls a non-blocking flock instead of blocking a worker thread: a thread stuck in flock() when
    its task is cancelled would take the lock later and keep it for ever.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(poll)
        yield fd
    finally:
        os.close(fd)
