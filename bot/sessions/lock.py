"""One message at a time per session: an asyncio lock per session key."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

_LOCKS: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


@asynccontextmanager
async def session_lock(key: str) -> AsyncIterator[None]:
    """Serialize handlers for `key`; locks vanish when nobody holds or awaits them."""
    lock = _LOCKS.get(key)
    if lock is None:
        lock = asyncio.Lock()
        _LOCKS[key] = lock
    async with lock:
        yield
