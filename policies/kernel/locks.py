"""The one inter-process file lock: read-modify-write cycles by a CLI and a running process never interleave."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from policies.kernel.files import FILE_MODE


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
