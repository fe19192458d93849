"""A skill's files: safe copies in, safe extraction of archives, and the tree hash that pins them.

Everything a skill ships is untrusted input. Copies and archives alike refuse absolute paths, `..`,
symlinks, hard links, devices and FIFOs, and oversized members or trees (zip-slip, tar bombs);
bytecode caches and VCS folders are left out so what runs is the source that was reviewed.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_FILE_BYTES = 5 << 20
MAX_TREE_BYTES = 20 << 20
MAX_FILES = 500
_SKIPPED_DIRS = frozenset(("__pycache__", ".git", ".hg", ".svn"))


class TreeError(ValueError):
    """The folder or archive holds something a skill may not ship."""


@dataclass
class _Budget:
    files: int = 0
    total: int = 0

    def charge(self, name: str, size: int) -> None:
        self.files += 1
        self.total += size
        if size > MAX_FILE_BYTES:
            raise TreeError(f"{name}: larger than {MAX_FILE_BYTES >> 20} MiB")
        if self.files > MAX_FILES or self.total > MAX_TREE_BYTES:
            raise TreeError(f"the skill is too large (at most {MAX_FILES} files, {MAX_TREE_BYTES >> 20} MiB)")


def _clean_relative(name: str) -> PurePosixPath | None:
    """The member's relative path, None for a skipped one; TreeError for anything that escapes."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise TreeError(f"{name!r}: absolute path")
    if any(part == ".." for part in path.parts):
        raise TreeError(f"{name!r}: path leaves the skill folder")
    parts = [p for p in path.parts if p not in ("", ".")]
    if not parts or any(p in _SKIPPED_DIRS for p in parts) or parts[-1].endswith((".pyc", ".pyo")):
        return None
    return PurePosixPath(*parts)


def _write_file(dst_root: Path, rel: PurePosixPath, data: bytes) -> None:
    target = dst_root.joinpath(*rel.parts)
    try:  # O_EXCL: a duplicate or clashing member name is refused, never overwrites
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise TreeError(f"{rel}: cannot be written ({exc.strerror})") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _walk(src: Path) -> Iterator[tuple[PurePosixPath, Path]]:
    """Every regular file under src (sorted), refusing links and special files."""
    for root, dirs, files in os.walk(src, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(dirs + files):
            path = Path(root) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise TreeError(f"{path.relative_to(src)}: symlinks are not allowed in a skill")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise TreeError(f"{path.relative_to(src)}: only regular files and folders are allowed")
        for name in sorted(files):
            rel = _clean_relative(str((Path(root) / name).relative_to(src)))
            if rel is not None:
                yield rel, Path(root) / name


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a skill folder into the new directory dst (0700 dirs, 0600 files)."""
    src = Path(src)
    if src.is_symlink() or not src.is_dir():
        raise TreeError(f"{src} is not a folder")
    dst.mkdir(mode=0o700)
    budget = _Budget()
    for rel, path in _walk(src):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise TreeError(f"{rel}: not a regular file")
            data = handle.read(MAX_FILE_BYTES + 1)
        budget.charge(str(rel), len(data))
        _write_file(dst, rel, data)


def extract_archive(archive: Path, dst: Path) -> None:
    """Extract a .zip or .tar(.gz/.bz2/.xz) into the new directory dst, member by member, checked."""
    dst.mkdir(mode=0o700)
    budget = _Budget()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                kind = stat.S_IFMT(info.external_attr >> 16)
                if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
                    raise TreeError(f"{info.filename!r}: links and special files are not allowed")
                rel = _clean_relative(info.filename)
                if info.is_dir() or rel is None:
                    continue
                with zf.open(info) as member:  # read capped: sizes in zip headers can lie
                    data = member.read(MAX_FILE_BYTES + 1)
                budget.charge(info.filename, len(data))
                _write_file(dst, rel, data)
        return
    try:
        tf = tarfile.open(archive, "r:*")
    except (tarfile.TarError, OSError) as exc:
        raise TreeError(f"{archive.name}: not a zip or tar archive") from exc
    with tf:
        for entry in tf:
            if not (entry.isfile() or entry.isdir()):
                raise TreeError(f"{entry.name!r}: links and special files are not allowed")
            rel = _clean_relative(entry.name)
            if entry.isdir() or rel is None:
                continue
            extracted = tf.extractfile(entry)
            assert extracted is not None
            data = extracted.read(MAX_FILE_BYTES + 1)
            budget.charge(entry.name, len(data))
            _write_file(dst, rel, data)


def tree_hash(folder: Path) -> str:
    """sha256 over the sorted relative paths, sizes and contents of every file the skill ships."""
    digest = hashlib.sha256(b"owlia-skill-tree-v1\0")
    for rel, path in sorted(_walk(Path(folder))):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()
