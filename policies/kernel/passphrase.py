"""Passphrases in memory: read without echo or logging, held in a bytearray we can wipe.

The signer unlocks its keystore with one and the companion decrypts the main key with one; both read
it the same way (a private file's first line, an env var, or a terminal prompt) and zero it after use.
"""

from __future__ import annotations

import getpass
import os
import secrets
from pathlib import Path

PASSPHRASE_ENV = "OWLIA_SIGNER_PASSPHRASE"


class PassphraseError(Exception):
    """No usable passphrase; the message never contains secret material."""


def zeroize(buf: bytearray | None) -> None:
    if buf is not None:
        for i in range(len(buf)):
            buf[i] = 0


def read_passphrase(
    env_var: str = PASSPHRASE_ENV, file: Path | None = None, *, prompt: bool = True, confirm: bool = False
) -> bytearray:
    """From a file (first line), else the env var, else a TTY prompt. Never echoed, never logged."""
    if file is not None:
        file = Path(file)
        try:
            # No symlink, and checked on the file actually opened. Group bits count too: in a service
            # install the signer's group is the socket group, which the bot's user is in.
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with open(fd, "rb", buffering=0) as handle:  # straight into a buffer we can wipe
                mode = os.fstat(fd).st_mode & 0o777
                if mode & 0o077:
                    raise PassphraseError(
                        f"{file} is readable by other users or the group (mode {mode:04o}); chmod 600 it"
                    )
                raw = bytearray(os.fstat(fd).st_size)
                del raw[handle.readinto(raw) or 0 :]
        except OSError as exc:
            raise PassphraseError(f"cannot read passphrase file {file}: {exc.strerror}") from None
        end = raw.find(b"\n")
        line = raw[: end if end >= 0 else len(raw)]
        while line.endswith(b"\r"):
            del line[-1:]
        zeroize(raw)
        if not line:
            raise PassphraseError(f"passphrase file {file} is empty")
        return line
    value = os.environ.get(env_var)
    if value:
        return bytearray(value.encode())
    if not prompt:
        raise PassphraseError(f"no passphrase: pass --passphrase-file, set {env_var}, or run on a terminal")
    first = bytearray(getpass.getpass("Signer passphrase: ").encode())
    if confirm:
        second = bytearray(getpass.getpass("Repeat passphrase: ").encode())
        same = secrets.compare_digest(bytes(first), bytes(second))
        zeroize(second)
        if not same:
            zeroize(first)
            raise PassphraseError("the passphrases do not match")
    if not first:
        raise PassphraseError("empty passphrase")
    return first
