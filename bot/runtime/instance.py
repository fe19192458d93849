"""One home, one bot: `owlia start` holds an exclusive lock on `<home>/state/bot.lock`.

Two bots on one home would both poll Telegram (each update answered by whichever got it), both run
every cron job and both write the same sessions. The lock is an flock, so it is released by the
kernel however the process ends (a crash never leaves a stale lock); the file names the holder's
pid so the error can say which process to stop.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from policies.kernel.files import ensure_private_dir

LOCK_NAME = "bot.lock"
# `owlia up` holds the lock for its whole stack and runs the chat channels as an `owlia start` child:
# it hands that child its locked descriptor (pass_fds) and names it here, so the child bot runs under
# the parent's lock instead of being refused by it.
INHERITED_ENV = "OWLIA_BOT_LOCK_FD"


class InstanceBusy(RuntimeError):
    """Another bot already runs on this home."""


def _inherited(path: Path) -> int | None:
    """The lock descriptor `owlia up` handed down, if it is really this home's lock file; flock on it
    below then succeeds only because that same open file already holds the lock (anything else named
    here is an ordinary open of the file, refused like any second bot)."""
    raw = os.environ.pop(INHERITED_ENV, None)
    if raw is None or not raw.isdigit():
        return None
    fd = int(raw)
    try:
        held, here = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if (held.st_dev, held.st_ino) != (here.st_dev, here.st_ino):
        return None
    return os.dup(fd)  # the same open file description: the same flock


@contextlib.contextmanager
def single_instance(home: Path) -> Iterator[int]:
    """Hold `home`'s bot lock (InstanceBusy if another bot holds it); yields the locked descriptor."""
    path = ensure_private_dir(home / "state") / LOCK_NAME
    inherited = _inherited(path) if path.exists() else None
    fd = (
        inherited
        if inherited is not None
        else os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    )
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise InstanceBusy(
                f"another bot is already running on {home} (pid {holder}): one home runs one bot. Stop it first "
                f"(Ctrl-C in its terminal, `systemctl stop owliabot-bot`, or `kill {holder}`), or use another "
                "--home."
            ) from None
        if inherited is None:  # the parent named itself already: its pid is the one to stop
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield fd
    finally:
        os.close(fd)  # releases the flock


def running(home: Path) -> bool:
    """Whether a bot holds this home's lock now (`owlia cron run` says so when none does). Creates nothing."""
    try:
        fd = os.open(home / "state" / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # no lock file: no bot has run here yet
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the shared lock if it was taken
    return False
