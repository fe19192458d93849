"""What `/health` probes, built before the rest of the bot: the signer client, the chain reader,
the LLM pool (credentials and cooldowns only, no provider), the event bus and the metrics.

`owlia start` builds this first, brings the control plane and the chat channels up on it and says
it is ready; the tools, memory, skills, MCP and the scheduler (bot/runtime/assemble.py) load just
after, on the same objects, so nothing is built twice. Everything here imports little: the
heavy modules stay off the way to the first `/health` 200.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.auth.credentials import CredentialResolver
from bot.config import BotConfig
from bot.observability.events import EventBus
from bot.observability.metrics import default_metrics
from bot.runtime.llm_pool import CredentialLookup, LLMPool, Secret
from bot.tools.chain_reader import RpcChainReader
from policies.kernel.files import ensure_private_dir
from signer.wire.client import SignerClient
from signer.wire.exchange import SignerError, load_token
from signer.wire.settings import socket_path

if TYPE_CHECKING:
    from bot.tools.chain_reader import RpcChainReader


@dataclass
class Reach:
    home: Path
    config: BotConfig
    signer: SignerClient | None  # None: no usable client token; `signer_problem` says why
    chain: RpcChainReader | None
    llm: LLMPool
    events: EventBus
    metrics: Any
    state_dir: Path
    signer_problem: str = ""

    async def close(self) -> None:
        """Its signer client and chain reader; a runtime built on it calls this last (Runtime.close)."""
        if self.signer is not None:
            await self.signer.close()
        if self.chain is not None:
            self.chain.close()


def credential_lookup(home: Path) -> CredentialLookup:
    """Credentials from `owlia auth` (auth.json, refreshed as needed) or the provider's env var."""
    resolver = CredentialResolver(home / "auth.json")

    async def lookup(name: str) -> Secret | None:
        credential = await resolver.get(name)
        return None if credential is None else Secret(credential.kind, credential.secret)

    return lookup


def signer_client(home: Path, config: BotConfig) -> tuple[SignerClient | None, str]:
    """The bot's signer client, or None and why not in the token loader's words (no token, a token
    file readable by others, a directory...), so the user is told what to fix, not just "no token"."""
    token_file = home / "secrets" / "signer.token"
    try:
        token = load_token(token_file)
    except SignerError as exc:
        return None, exc.message
    return SignerClient(socket_path(home, config.signer), token), ""


def build_reach(
    home: Path, config: BotConfig, *, lookup: CredentialLookup | None = None, metrics: Any | None = None
) -> Reach:
    home = ensure_private_dir(home)
    state = ensure_private_dir(home / "state")
    signer, signer_problem = signer_client(home, config)
    return Reach(
        home,
        config,
        signer,
        RpcChainReader({c.id: c.rpc_url for c in config.chains}),
        LLMPool(config.bot.llm, lookup or credential_lookup(home), state / "llm-cooldowns.json"),
        EventBus(),
        metrics if metrics is not None else default_metrics(),
        state,
        signer_problem,
    )
