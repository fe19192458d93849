"""The Telegram channel (our own Bot API client on httpx, botapi.py): polling or webhook in,
Markdown-as-HTML replies out.

Names are loaded on first use, so `owlia start` pays for the client (and httpx under it) only when
Telegram is configured and has a token.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {"MENU": "channel", "TelegramChannel": "channel", "explorer_links": "channel"}

__all__ = ["MENU", "TelegramChannel", "explorer_links"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
