"""Filesystem helpers shared by workspace, memory and sessions: private modes, confined paths.

The bot's files hold conversations and wallet context, so they are 0600 in 0700 directories and
every user-supplied path is checked by its real path, so `..` or a symlink cannot escape.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


class PathNotAllowed(PermissionError):
    """A path points outside the area it was confined to, or is of a kind we refuse."""


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) 0700 and tighten it if it exists; refuse a symlink or a non-dir."""
    path = Path(path)
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise PathNotAllowed(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise PathNotAllowed(f"{path} belongs to uid {info.st_uid}, not to this user")
    if stat.S_IMODE(info.st_mode) != DIR_MODE:
        path.chmod(DIR_MODE)
    return path


def open_private_db(path: Path, *, timeout: float = 5.0, check_same_thread: bool = True) -> sqlite3.Connection:
    """An autocommit SQLite connection to a 0600 file in a 0700 dir; refuses a symlinked file."""
    path = private_dir(Path(path).parent) / Path(path).name
    if path.is_symlink():
        raise PathNotAllowed(f"{path} is a symlink")
    os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))
    os.chmod(path, FILE_MODE)
    return sqlite3.connect(path, isolation_level=None, timeout=timeout, check_same_thread=check_same_thread)


def is_within(child: Path, parent: Path) -> bool:
    """True if the real path of `child` is `parent`'s real path or below it."""
    real_child = os.path.realpath(child)
    real_parent = os.path.realpath(parent)
    return os.path.commonpath([real_child, real_parent]) == real_parent


def write_new_private(path: Path, text: str) -> bool:
    """Create `path` 0600 with `text` unless something is already there; True if written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return True


def write_atomic_private(path: Path, data: bytes) -> None:
    """Replace `path` atomically with a 0600 file: temp file, fsync, rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_regular_text(path: Path) -> str:
    """Read a regular file without following a final symlink (raises PathNotAllowed otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if Path(path).is_symlink():
            raise PathNotAllowed(f"{path} is a symlink") from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise PathNotAllowed(f"{path} is not a regular file")
        return handle.read().decode("utf-8", errors="replace")
