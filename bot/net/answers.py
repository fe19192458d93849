"""What the bot's strict HTTP clients (the LLM providers, the Telegram Bot API) do alike with an
answer from a server they do not trust: read it as sent, bounded, and check JSON types as JSON
means them."""

from __future__ import annotations

from typing import Any, TypeGuard, TypeVar

import httpx

T = TypeVar("T")


def is_a(value: Any, kind: type[T] | tuple[type[T], ...]) -> TypeGuard[T]:
    """`isinstance` with JSON's types: `true` is not a number (Python's bool is an int)."""
    return isinstance(value, kind) and (not isinstance(value, bool) or kind is bool)


def compressed(response: httpx.Response) -> bool:
    """The answer declares an encoding. We ask for none (`accept-encoding: identity`): a compressed
    body could inflate a thousandfold inside one read."""
    return response.headers.get("content-encoding", "identity").strip().lower() != "identity"


async def read_capped(response: httpx.Response, limit: int) -> bytes | None:
    """The body as sent (never decompressed), or None as soon as it passes `limit` bytes."""
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
