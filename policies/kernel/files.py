"""File permissions for secrets: private dirs are 0700, private files 0600, or we refuse to run.

A key file another local user can read is already a leaked key, so the signer checks before it
trusts anything it reads and writes atomically so a crash never leaves a half-written secret.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class PermissionProblem(PermissionError):
    """A secret's file or directory is readable or writable by someone other than its owner."""


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) as 0700; tighten an existing directory we own."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise PermissionProblem(f"{path} belongs to uid {info.st_uid}, not to this user ({os.getuid()})")
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)
    return path


def write_private_file(path: Path, data: bytes) -> None:
    """Write atomically with mode 0600 from the first byte: temp file, fsync, rename, fsync dir."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def check_private_file(path: Path) -> None:
    """Refuse a secret that is a symlink, not ours, or open to group/other."""
    path = Path(path)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise PermissionProblem(f"{path} is a symlink; secrets must be regular files")
    if info.st_uid != os.getuid():
        raise PermissionProblem(f"{path} belongs to uid {info.st_uid}, not to this user ({os.getuid()})")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise PermissionProblem(f"{path} has mode {mode:04o}; run `chmod 600 {path}`")
