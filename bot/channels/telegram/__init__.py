"""The Telegram channel (aiogram 3): polling or webhook in, Markdown-as-HTML replies out.

Names are loaded on first use: aiogram builds its pydantic models at import (seconds on a small
machine), which `owlia start` should only pay when Telegram is configured and has a token.
"""

from __future__ import annotations

from typing import Any

_WHERE = {"MENU": "channel", "TelegramChannel": "channel", "explorer_links": "channel"}

__all__ = ["MENU", "TelegramChannel", "explorer_links"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
