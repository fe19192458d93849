"""What is at the signer's socket path, as the daemon's start and its server both judge it (real sockets)."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest

from signer.server import _remove_stale_socket
from signer.socket_probe import SocketPath, probe


@pytest.fixture
def where():
    with tempfile.TemporaryDirectory(prefix="ow") as tmp:  # short: Unix socket paths max out at 108 bytes
        yield Path(tmp) / "signer.sock"


def _bound(path: Path, *, listening: bool) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    if listening:
        sock.listen(1)
    return sock


def test_nothing_there_is_free(where: Path) -> None:
    assert probe(where) is SocketPath.FREE
    _remove_stale_socket(where)  # nothing to do


def test_a_file_that_is_not_a_socket_is_never_replaced(where: Path) -> None:
    where.write_text("mine")
    assert probe(where) is SocketPath.NOT_A_SOCKET
    with pytest.raises(RuntimeError, match="not a socket"):
        _remove_stale_socket(where)
    assert where.read_text() == "mine"


def test_a_dead_signers_socket_is_stale_and_replaced(where: Path) -> None:
    _bound(where, listening=False).close()  # the socket file stays, nobody listens
    assert probe(where) is SocketPath.STALE
    _remove_stale_socket(where)
    assert not where.exists()


def test_a_live_signers_socket_is_left_alone(where: Path) -> None:
    live = _bound(where, listening=True)
    try:
        assert probe(where, timeout=2) is SocketPath.LIVE
        with pytest.raises(RuntimeError, match="already listening"):
            _remove_stale_socket(where)
        assert where.exists()
    finally:
        live.close()
