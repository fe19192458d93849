"""Private files for every process: 0700 directories, 0600 files, no symlinks, durable writes.

A key file, a conversation or an approval journal another local user can read or replace is already
leaked, so one set of rules holds everywhere: a private directory or file must be a real one (never
a symlink someone could point elsewhere), ours, and closed to group and other; a replacement is
written to a 0600 temp file, fsynced, renamed over the old one, and the directory is fsynced too,
so a crash leaves the old file or the new one, never half of either. User-supplied paths are
checked by their real path, so `..` or a symlink cannot escape the area they were confined to.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


class PermissionProblem(PermissionError):
    """A secret's file or directory is readable or writable by someone other than its owner."""


class DamagedFile(Exception):
    """A state file the program cannot read as what it must be. Its message names the file and what to
    do; nothing is written over it (a fresh default in its place would lose what the user had)."""


def damaged(path: Path, what: str, kind: type[DamagedFile] = DamagedFile) -> DamagedFile:
    return kind(
        f"{path} is {what}; nothing was changed. Move it aside (mv {path} {path}.damaged) "
        "to start it afresh, or restore it from a backup"
    )


class PathNotAllowed(PermissionProblem):
    """A path points outside the area it was confined to, or is of a kind we refuse (a symlink)."""


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) as 0700; tighten an existing one we own; refuse a symlink or a non-dir."""
    path = Path(path)
    try:
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    except FileExistsError:  # a file (or a dangling symlink) where the directory goes
        raise PathNotAllowed(
            f"cannot use {path} as a private directory: a file is there; move it aside"
        ) from None
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise PathNotAllowed(f"{path} is a symlink; private directories must be real directories")
    if not stat.S_ISDIR(info.st_mode):
        raise PathNotAllowed(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise PermissionProblem(f"{path} belongs to uid {info.st_uid}, not to this user ({os.getuid()})")
    if stat.S_IMODE(info.st_mode) != DIR_MODE:
        path.chmod(DIR_MODE)
    return path


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in `path` durable."""
    dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_private_file(path: Path, data: bytes) -> None:
    """Replace `path` atomically with mode 0600 from the first byte: temp file, fsync, rename, fsync dir.

    A writer killed before its rename leaves its temp file, a full copy of what it was writing (a
    login token, say), which would outlive the `owlia auth logout` that removed the entry: each
    write sweeps the temp files of `path` whose writer is gone (`ORPHAN_SECONDS` old at least).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sweep_orphans(path)
    fsync_dir(path.parent)


ORPHAN_SECONDS = 30.0
"""A temp file this old whose pid is not running is a dead writer's. A live writer's lasts
milliseconds; the age also spares one in another pid namespace (a container sharing the volume),
whose pid means nothing here."""


def _sweep_orphans(path: Path) -> None:
    """Remove `.<name>.<pid>.tmp` files beside `path` whose pid is no longer running."""
    prefix = f".{path.name}."
    old = time.time() - ORPHAN_SECONDS
    for entry in os.scandir(path.parent):
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix) : -len(".tmp")]
        try:
            fresh = entry.stat(follow_symlinks=False).st_mtime > old
        except OSError:
            continue
        if pid.isdigit() and not fresh and not _running(int(pid)):
            try:
                Path(entry.path).unlink(missing_ok=True)
            except OSError:  # best effort (a directory planted there, say): the write itself succeeded
                continue


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def write_new_private(path: Path, text: str) -> bool:
    """Create `path` 0600 with `text` unless something (a symlink included) is already there; True if written."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    fsync_dir(path.parent)
    return True


def check_private_file(path: Path) -> None:
    """Refuse a secret that is a symlink, not ours, or open to group/other."""
    path = Path(path)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise PathNotAllowed(f"{path} is a symlink; secrets must be regular files")
    if info.st_uid != os.getuid():
        raise PermissionProblem(f"{path} belongs to uid {info.st_uid}, not to this user ({os.getuid()})")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise PermissionProblem(f"{path} has mode {mode:04o}; run `chmod 600 {path}`")


def read_regular_text(path: Path) -> str:
    """Read a regular file without following a final symlink (raises PathNotAllowed otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if Path(path).is_symlink():
            raise PathNotAllowed(f"{path} is a symlink") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which raises IsADirectoryError itself
        os.close(fd)
        raise PathNotAllowed(f"{path} is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        return handle.read().decode("utf-8", errors="replace")


def open_private_db(
    path: Path, *, timeout: float = 5.0, check_same_thread: bool = True, schema: str | None = None
) -> sqlite3.Connection:
    """An autocommit SQLite connection to a 0600 file in a 0700 dir; refuses a symlinked file.

    With `schema`, the script is run first, and a file that is not SQLite is refused (DamagedFile)
    rather than started afresh over what the user had."""
    path = ensure_private_dir(Path(path).parent) / Path(path).name
    if path.is_symlink():
        raise PathNotAllowed(f"{path} is a symlink")
    os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))
    os.chmod(path, FILE_MODE)
    conn = sqlite3.connect(path, isolation_level=None, timeout=timeout, check_same_thread=check_same_thread)
    if schema is not None:
        try:
            conn.executescript(schema)
        except sqlite3.DatabaseError:
            conn.close()
            raise damaged(path, "not a SQLite database") from None
    return conn


def is_within(child: Path, parent: Path) -> bool:
    """True if the real path of `child` is `parent`'s real path or below it."""
    real_child = os.path.realpath(child)
    real_parent = os.path.realpath(parent)
    return os.path.commonpath([real_child, real_parent]) == real_parent
