"""What is at the signer's socket path: one probe for the daemon's start (signer.serve, before the
keystore is unlocked) and for its server (signer.server, when it binds)."""

from __future__ import annotations

import os
import socket
import stat
from enum import Enum
from pathlib import Path


class SocketPath(Enum):
    FREE = "nothing there"
    STALE = "a socket nobody listens on (a dead signer's)"
    LIVE = "a socket a process listens on"
    NOT_A_SOCKET = "a file that is not a socket"


def probe(path: Path, *, timeout: float | None = None) -> SocketPath:
    """Connects to a socket found there to tell a live one from a stale one; any other error (of
    lstat or connect, a timeout included) is raised for the caller to judge."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return SocketPath.FREE
    if not stat.S_ISSOCK(mode):
        return SocketPath.NOT_A_SOCKET
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        client.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        return SocketPath.STALE
    finally:
        client.close()
    return SocketPath.LIVE
