"""The capabilities tools may use, gathered in one object the runtime builds once.

Tools receive these through ToolContext and never construct their own clients, so a test (or a
restricted context such as a heartbeat) can hand them exactly what they may touch. A field left as
None means the capability is not configured: the tool must say so, never fall back to something else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bot.observability.events import EventBus

if TYPE_CHECKING:
    from bot.memory.index import MemoryIndex
    from signer.wire.client import SignerClient


class PriceSource(Protocol):
    """USD price of one unit of an asset (e.g. 'ETH', 'USDC'), as a decimal string, or None if unknown.

    Strings, not floats: prices are shown to people and compared with limits elsewhere.
    """

    name: str

    async def usd_price(self, symbol: str) -> str | None: ...


class ChainReader(Protocol):
    """Read-only JSON-RPC to a configured chain (never a signing endpoint)."""

    async def call(self, chain_id: int, method: str, *params: Any) -> Any: ...

    def close(self) -> None: ...


class Fetcher(Protocol):
    """Outbound HTTP under the domain policy and SSRF rules (bot.net.fetch.SafeFetcher)."""

    async def fetch(self, url: str) -> Any: ...

    async def close(self) -> None: ...


@dataclass
class Services:
    workspace: Path
    events: EventBus = field(default_factory=EventBus)
    default_chain_id: int = 31337
    chain_names: dict[int, str] = field(default_factory=dict)
    signer: SignerClient | None = None
    signer_problem: str = "no signer client token"
    """Why `signer` is None, in the token loader's words (they name the token file): for the user's own
    console and commands, not for tool results, which the model and its provider see."""
    chain: ChainReader | None = None
    memory: MemoryIndex | None = None
    prices: PriceSource | None = None
    fetcher: Fetcher | None = None
    state_dir: Path | None = None
    """A 0700 directory for the bot's own small stores (contacts, reminders)."""
    companion_app_url: str | None = None
    """The companion web app's page (the bridge's `/app/`), linked from a request waiting for approval."""
