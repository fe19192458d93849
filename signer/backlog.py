"""Whether more requests are already waiting, unread, on the signer's sockets.

Group commit pays off only when several requests are in flight; with one client, handing the
commit to the writer thread costs two thread wake-ups for nothing, so the engine commits on the
event loop instead. But the loop takes one request at a time all the way to its commit point, and
meanwhile the other clients' requests sit unread in the kernel: the engine's own count of requests
in flight cannot see them, and under load every commit would block the loop for an fsync. An
epoll set of every client socket, polled with a zero timeout, sees them for about a microsecond.
"""

from __future__ import annotations

import select


class Backlog:
    def __init__(self) -> None:
        self._epoll = select.epoll() if hasattr(select, "epoll") else None  # elsewhere: never "waiting"

    def add(self, fd: int) -> None:
        if self._epoll is not None:
            self._epoll.register(fd, select.EPOLLIN)

    def remove(self, fd: int) -> None:
        """Call before the socket is closed, so a reused descriptor number is never unregistered."""
        if self._epoll is not None:
            try:
                self._epoll.unregister(fd)
            except (OSError, ValueError):
                pass

    def waiting(self) -> bool:
        """Does any client have bytes the signer has not read yet (a request, or a hang-up)?"""
        return self._epoll is not None and bool(self._epoll.poll(0, 1))

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()
            self._epoll = None
