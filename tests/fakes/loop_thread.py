"""A fake server on its own event loop in a daemon thread, so sync tests can drive async clients.

Subclasses implement `_main`: create `self._stopping`, start listening, call `self._ready.set()`,
then serve until `self._stopping` is set. `start()` returns once they listen.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Self


class LoopThread:
    thread_name = "fake-server"

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, name=self.thread_name, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{self.thread_name} did not start")
        return self

    def stop(self) -> None:
        if self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        raise NotImplementedError
