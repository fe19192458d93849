"""Where a session's replies go, read from its key: what the cron tools and the cut-off notices use.

A session key is `channel:chat`, or `channel:chat:peer` in a group (bot.channels.base.Inbound builds
it); the target is `channel:chat`, the form bot.notify delivers to."""

from __future__ import annotations


def target_of_session(session_key: str) -> str:
    """Where a session's replies go: `telegram:42` as is; a group's `discord:chan:user` -> `discord:chan`."""
    channel, _, rest = session_key.partition(":")
    return f"{channel}:{rest.split(':', 1)[0]}"
