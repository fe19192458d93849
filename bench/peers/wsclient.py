"""A minimal WebSocket client (RFC 6455, text frames) for nanobot's websocket channel. nanobot is driven
through its local websocket chat interface and the benchmark uses only the standard library, so this small
client (handshake, masked text frames, ping replies) stands in for a third-party dependency.

A thread reads every frame as it arrives, answers pings at once and queues the text. Answering pings
only when the benchmark next read a message was not enough: while the other two services took their
turn of 100 messages (OpenClaw's take ~25 s), nobody read nanobot's socket, its server's ping went
unanswered past its 20 s timeout, and it closed the connection mid-run.
"""

from __future__ import annotations

import base64
import contextlib
import os
import queue
import socket
import struct
import threading


class WSClient:
    def __init__(self, host: str, port: int, path: str, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(req.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")
        self.timeout = timeout
        self._send_lock = threading.Lock()  # the reader thread sends pongs, the caller sends text
        self._texts: queue.SimpleQueue[str | ConnectionError] = queue.SimpleQueue()
        self.sock.settimeout(
            None
        )  # the reader waits for as long as the connection lives; recv_text times out
        threading.Thread(target=self._read_frames, name="ws-reader", daemon=True).start()

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        with self._send_lock:
            self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_text(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def recv_text(self) -> str:
        """The next text message; ConnectionError once the connection is gone, TimeoutError after `timeout`."""
        try:
            item = self._texts.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"no websocket message within {self.timeout:g} s") from None
        if isinstance(item, ConnectionError):
            self._texts.put(item)  # and for every later call
            raise item
        return item

    def _read_frames(self) -> None:
        try:
            while True:
                self._texts.put(self._next_text())
        except ConnectionError as exc:
            self._texts.put(exc)
        except OSError as exc:
            self._texts.put(ConnectionError(f"websocket closed ({exc})"))

    def _next_text(self) -> str:
        parts: list[bytes] = []
        while True:
            b1, b2 = self._read(2)
            opcode, n = b1 & 0x0F, b2 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b2 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x9:  # ping
                self._send_frame(0xA, data)
                continue
            if opcode == 0x8:
                raise ConnectionError("websocket closed by server")
            if opcode in (0x1, 0x2, 0x0):
                parts.append(data)
                if b1 & 0x80:
                    return b"".join(parts).decode("utf-8", "replace")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send_frame(0x8, struct.pack(">H", 1000))
        with contextlib.suppress(OSError):
            self.sock.close()
