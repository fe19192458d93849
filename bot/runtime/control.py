"""Wire the runtime to the control-plane gateway: health checks and a background server.

Health is about reachability, cheaply: the signer answers `status`, the default chain answers
`eth_chainId` with the configured id, and at least one LLM profile has a credential and is not
cooling down. No check spends model tokens.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from bot.gateway import create_app
from bot.gateway.auth import load_or_create_token
from bot.gateway.health import ComponentHealth, HealthFn, combine_checks
from bot.gateway.server import GatewayConfigError, start_in_background
from bot.runtime.channel_state import ChannelStates
from bot.runtime.reach import Reach

if TYPE_CHECKING:
    from bot.runtime.state import Runtime

log = logging.getLogger(__name__)
WILDCARD_BINDS = ("0.0.0.0", "::")  # reached by any name; the token (required off loopback) is the guard


def _reach(target: Reach | Runtime) -> Reach:
    return target if isinstance(target, Reach) else target.reach


def runtime_health(target: Reach | Runtime, channels: ChannelStates | None = None) -> HealthFn:
    """The checks /health runs, on `owlia start`'s Reach or a whole Runtime (the same objects)."""
    reach = _reach(target)

    async def bot() -> ComponentHealth:
        return ComponentHealth(True, "running")

    async def signer() -> ComponentHealth:
        client = reach.signer
        if client is None:
            return ComponentHealth(False, "no signer client token")
        status = await client.status()
        return ComponentHealth(not status.frozen, "frozen" if status.frozen else "reachable")

    async def chain() -> ComponentHealth:
        wanted = reach.config.default_chain.id
        reader = reach.chain
        if reader is None:
            return ComponentHealth(False, "no chain configured")
        got = int(await reader.call(wanted, "eth_chainId"), 16)
        return ComponentHealth(
            got == wanted, f"chain id {got}" + ("" if got == wanted else f", expected {wanted}")
        )

    async def providers() -> ComponentHealth:
        if not await reach.llm.configured():
            return ComponentHealth(False, "no credentials (owlia auth setup)")
        ready = await reach.llm.ready()
        return ComponentHealth(bool(ready), f"ready: {', '.join(ready)}" if ready else "all cooling down")

    async def chat_channels() -> ComponentHealth:
        assert channels is not None
        return ComponentHealth(channels.healthy(), channels.summary())

    checks = {"bot": bot, "signer": signer, "chain": chain, "providers": providers}
    if channels is not None and channels.states:
        checks["channels"] = chat_channels
    return combine_checks(checks)


@asynccontextmanager
async def gateway(
    target: Reach | Runtime, channels: ChannelStates | None = None
) -> AsyncIterator[object | None]:
    """Run the gateway for the life of the block if enabled; a busy port is a warning, not a crash.

    `owlia start` passes its Reach (the gateway is up before the rest of the bot), `owlia chat` its Runtime."""
    reach = _reach(target)
    settings = reach.config.bot.gateway
    if not settings.enabled:
        yield None
        return
    token = load_or_create_token(reach.home / "secrets" / "gateway.token")
    app = create_app(
        events=reach.events,
        metrics=reach.metrics,
        health=runtime_health(reach, channels),
        token=token,
        hosts=("*",) if settings.host in WILDCARD_BINDS else (settings.host,),
    )
    try:
        running = await start_in_background(app, settings.host, settings.port, token=token)
    except GatewayConfigError as exc:
        log.warning("control plane not started: %s", exc)
        yield None
        return
    reach.events.emit("health", "gateway.started", {"url": running.url})
    try:
        yield running
    finally:
        await running.stop()
