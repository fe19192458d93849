"""The standard read/write tools in one list, for the runtime to register (sign tools and web_fetch
are added by the runtime itself, so this list can never grant signing by accident)."""

from __future__ import annotations

from bot.tools.base import Tool
from bot.tools.contacts import CONTACT_TOOLS
from bot.tools.cron_tools import CRON_TOOLS
from bot.tools.memory_tools import MEMORY_TOOLS
from bot.tools.prices import PRICE_TOOLS
from bot.tools.reminders import REMINDER_TOOLS
from bot.tools.tx_status import TX_TOOLS
from bot.tools.wallet import WALLET_TOOLS


def standard_tools() -> list[Tool]:
    return [
        *WALLET_TOOLS,
        *PRICE_TOOLS,
        *TX_TOOLS,
        *MEMORY_TOOLS,
        *CONTACT_TOOLS,
        *REMINDER_TOOLS,
        *CRON_TOOLS,
    ]
