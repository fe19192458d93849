"""Everything `owlia start` runs in one process: the configured channels, the scheduler, the
heartbeat, the signer watcher and the control plane, until SIGINT/SIGTERM.

A channel that is not set up (no token) or whose token file is unsafe is skipped with a warning
that says how to fix it; the rest of the bot runs. The chat libraries are imported only for the
channels that actually start.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bot.channels.access import AccessStore, open_access
from bot.channels.tokens import TokenError, load_token, token_path
from bot.config import BotConfig
from bot.notify import Notifier
from bot.runtime.assemble import build_runtime
from bot.runtime.state import Runtime
from bot.runtime.channel_state import Channel, ChannelStates
from bot.runtime.instance import single_instance

log = logging.getLogger(__name__)


class _Service(Protocol):
    """What runs beside the channels for the bot's whole life: started first, stopped last."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def _telegram(core: Any, settings: Any, token: str, access: AccessStore, config: BotConfig) -> Channel:
    from bot.channels.telegram.channel import TelegramChannel, explorer_links

    return TelegramChannel(core, settings, token, access, explorers=explorer_links(config.chains))


def _discord(core: Any, settings: Any, token: str, access: AccessStore, config: BotConfig) -> Channel:
    from bot.channels.discord.channel import DiscordChannel

    return DiscordChannel(core, settings, token, access)


FACTORIES: dict[str, Callable[..., Channel]] = {"telegram": _telegram, "discord": _discord}


@dataclass
class Launch:
    runtime: Runtime
    notifier: Notifier
    channels: dict[str, Channel] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # channel -> why, with the fix
    states: ChannelStates = field(default_factory=ChannelStates)


def open_channels(home: Path, config: BotConfig, runtime: Runtime, access: AccessStore,
                  notifier: Notifier) -> Launch:
    launch = Launch(runtime, notifier)
    assert runtime.core is not None
    for name, factory in FACTORIES.items():
        settings = getattr(config.bot.channels, name)
        if not settings.enabled:
            continue
        try:
            token = load_token(home, settings, name)
        except TokenError as exc:
            launch.skipped[name] = str(exc)
            continue
        if token is None:
            launch.skipped[name] = (f"no token: set {settings.token_env} or put it in {token_path(home, name)} "
                                    "(mode 0600)")
            continue
        channel = factory(runtime.core, settings, token, access, config)
        launch.channels[name] = channel
        notifier.register(name, channel.send_text)
    return launch


async def serve(home: Path, config: BotConfig, *, stop: asyncio.Event | None = None,
                on_ready: Callable[[Launch], None] | None = None) -> Launch:
    """Run until `stop` is set (or a signal arrives); returns what ran, for the caller's summary.

    Raises InstanceBusy when another bot already runs on this home."""
    with single_instance(home):
        return await _serve(home, config, stop or asyncio.Event(), on_ready)


async def _serve(home: Path, config: BotConfig, stop: asyncio.Event,
                 on_ready: Callable[[Launch], None] | None) -> Launch:
    from bot.runtime.control import gateway
    from bot.runtime.pairing_watch import PairingWatch
    from bot.runtime.signer_watch import SignerWatch
    from bot.scheduler.heartbeat import HeartbeatService
    from bot.scheduler.service import SchedulerService

    _stop_on_signals(stop)
    runtime = build_runtime(home, config)
    assert runtime.core is not None and runtime.services.state_dir is not None
    notifier = Notifier(config.bot.notify.default_target, runtime.services.state_dir)
    runtime.core.observers.append(notifier.note_inbound)
    access = open_access(home, config.bot.pairing)
    launch = open_channels(home, config, runtime, access, notifier)
    for name, why in launch.skipped.items():
        log.warning("%s channel skipped: %s", name, why)
    services: list[_Service] = [PairingWatch(access, notifier, config.bot.pairing.owners),
                SchedulerService(runtime, notifier, config.bot.cron),
                HeartbeatService(runtime, notifier, config.bot.heartbeat),
                SignerWatch(runtime, notifier)]
    tasks: dict[str, asyncio.Task[None]] = {}
    try:
        for service in services:
            await service.start()
        async with gateway(runtime, launch.states):
            for name, channel in launch.channels.items():
                tasks[name] = asyncio.create_task(launch.states.keep(name, channel, stop), name=f"channel-{name}")
            if on_ready is not None:
                on_ready(launch)
            # after ready, never before it: the first reply should not wait for the provider SDK import
            warming = asyncio.create_task(runtime.llm.warm(), name="warm-llm-sdk")
            await stop.wait()
            await warming
            await asyncio.gather(*tasks.values(), return_exceptions=True)
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        for service in reversed(services):
            try:
                await service.stop()
            except Exception:  # noqa: BLE001 - shut the rest down regardless
                log.exception("stopping %s failed", type(service).__name__)
        access.close()
        await runtime.close()
    return launch


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread (tests)
            pass
