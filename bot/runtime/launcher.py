"""Everything `owlia start` runs in one process: the configured channels, the scheduler, the
heartbeat, the signer watcher and the control plane, until SIGINT/SIGTERM.

A channel that is not set up (no token) or whose token file is unsafe is skipped with a warning
that says how to fix it; the rest of the bot runs. The chat libraries are imported only for the
channels that actually start.

Ready first, the rest just after: what `/health` probes (bot/runtime/reach.py), the control plane
and the channels come up before anything else; the tools, memory, skills, MCP, the scheduler and
the watchers (about 0.1 s of imports here) load once the channels are connected, their modules
imported in a worker thread. A message that arrives before that waits for it (LateCore); if it
fails, the bot stops with the error, as it would have before ready.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bot.channels.access import AccessStore, open_access
from bot.channels.tokens import TokenError, load_token, token_path
from bot.config import BotConfig
from bot.notify import Notifier
from bot.runtime.channel_state import Channel, ChannelStates
from bot.runtime.instance import single_instance
from bot.runtime.reach import Reach, build_reach

if TYPE_CHECKING:
    from bot.agent.sink import ReplySink
    from bot.channels.core import BotCore, Handled
    from bot.runtime.state import Runtime

log = logging.getLogger(__name__)

# Imported in a worker thread once the channels are up: everything the first /health 200 does not need.
AFTER_READY = (
    "bot.runtime.assemble",
    "bot.memory",
    "bot.net.ssrf",
    "bot.tools.catalog",
    "bot.tools.signing",
    "bot.skills.tools",
    "bot.mcp_servers.tools",
    "bot.tools.prices",
    "bot.auth.credentials",
    "bot.runtime.pairing_watch",
    "bot.runtime.signer_watch",
    "bot.runtime.heartbeat",
    "bot.runtime.scheduler",
    "bot.channels.telegram.sink",
)
CONNECT_WAIT = 5.0  # seconds the rest waits for the channels to connect before loading anyway


class _Service(Protocol):
    """What runs beside the channels: started once the bot is built (just after ready), stopped
    before it closes."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def _telegram(core: Any, settings: Any, token: str, access: AccessStore, config: BotConfig) -> Channel:
    from bot.channels.telegram.channel import TelegramChannel, explorer_links  # lazy: 77 ms, 9524 KiB

    return TelegramChannel(core, settings, token, access, explorers=explorer_links(config.chains))


def _discord(core: Any, settings: Any, token: str, access: AccessStore, config: BotConfig) -> Channel:
    from bot.channels.discord.channel import DiscordChannel  # lazy: 202 ms, 22852 KiB

    return DiscordChannel(core, settings, token, access)


FACTORIES: dict[str, Callable[..., Channel]] = {"telegram": _telegram, "discord": _discord}


class LateCore:
    """The channels' BotCore before it exists: `handle` waits until the runtime is built (or its
    build failed: then the message fails like any other, and the bot is stopping)."""

    def __init__(self) -> None:
        self._core: asyncio.Future[BotCore] = asyncio.get_running_loop().create_future()

    def set(self, core: BotCore) -> None:
        self._core.set_result(core)

    def fail(self, exc: BaseException) -> None:
        if not self._core.done():
            self._core.set_exception(RuntimeError(f"the bot failed to start ({type(exc).__name__})"))
            self._core.exception()  # retrieved: nobody may be waiting

    async def handle(self, inbound: Any, sink: ReplySink) -> Handled:
        core = await asyncio.shield(self._core)
        return await core.handle(inbound, sink)


@dataclass
class Launch:
    reach: Reach
    notifier: Notifier
    channels: dict[str, Channel] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # channel -> why, with the fix
    states: ChannelStates = field(default_factory=ChannelStates)
    runtime: Runtime | None = None  # the whole bot: set once loaded, just after ready


def open_channels(
    home: Path, config: BotConfig, reach: Reach, core: Any, access: AccessStore, notifier: Notifier
) -> Launch:
    launch = Launch(reach, notifier)
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
            launch.skipped[name] = (
                f"no token: set {settings.token_env} or put it in {token_path(home, name)} (mode 0600)"
            )
            continue
        channel = factory(core, settings, token, access, config)
        launch.channels[name] = channel
        notifier.register(name, channel.send_text)
    return launch


async def serve(
    home: Path,
    config: BotConfig,
    *,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[Launch], None] | None = None,
) -> Launch:
    """Run until `stop` is set (or a signal arrives); returns what ran, for the caller's summary.

    Raises InstanceBusy when another bot already runs on this home."""
    with single_instance(home):
        return await _serve(home, config, stop or asyncio.Event(), on_ready)


async def _serve(
    home: Path, config: BotConfig, stop: asyncio.Event, on_ready: Callable[[Launch], None] | None
) -> Launch:
    from bot.runtime.control import gateway  # lazy: 10 ms, 536 KiB

    _stop_on_signals(stop)
    reach = build_reach(home, config)
    notifier = Notifier(config.bot.notify.default_target, reach.state_dir)
    access = open_access(home, config.bot.pairing)
    core = LateCore()
    launch = open_channels(home, config, reach, core, access, notifier)
    for name, why in launch.skipped.items():
        log.warning("%s channel skipped: %s", name, why)
    services: list[_Service] = []
    tasks: dict[str, asyncio.Task[None]] = {}
    try:
        async with gateway(reach, launch.states):
            for name, channel in launch.channels.items():
                tasks[name] = asyncio.create_task(
                    launch.states.keep(name, channel, stop), name=f"channel-{name}"
                )
            if on_ready is not None:
                on_ready(launch)
            try:
                await _connected(launch.channels.values(), stop, CONNECT_WAIT)
                runtime = launch.runtime = await _load_runtime(home, config, reach)
            except BaseException as exc:
                core.fail(exc)
                raise
            assert runtime.core is not None
            if not gc.isenabled():  # `owlia start` turned it off for the way to ready (bot/cli/start_run.py)
                gc.enable()
                # One full pass now (about 30 ms here, off the way to ready), so the startup heap is old
                # and left alone: otherwise the collector would catch up on all of it, generation by
                # generation, during the first messages.
                gc.collect()
            runtime.core.observers.append(notifier.note_inbound)
            core.set(runtime.core)
            services.extend(_services(runtime, access, notifier))
            for service in services:
                await service.start()
            # after ready, never before it: the first reply should not wait for the provider client's build
            warming = asyncio.create_task(runtime.llm.warm(), name="warm-llm")
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
        if launch.runtime is not None:
            await launch.runtime.close()
        else:
            await reach.close()
    return launch


async def _connected(channels: Any, stop: asyncio.Event, timeout: float) -> None:
    """Until every channel that can tell (Telegram) is connected, `stop` or `timeout`: the imports
    after ready would otherwise compete with the connection for the one interpreter lock."""
    events = [
        ready for channel in channels if isinstance(ready := getattr(channel, "ready", None), asyncio.Event)
    ]
    if not events:
        return
    waits: list[asyncio.Future[Any]] = [
        asyncio.ensure_future(asyncio.gather(*(e.wait() for e in events))),
        asyncio.ensure_future(stop.wait()),
    ]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


async def _load_runtime(home: Path, config: BotConfig, reach: Reach) -> Runtime:
    """Import the rest in a worker thread (the loop keeps answering /health and polling), then
    build it on this loop (SQLite connections belong to the thread that opens them)."""

    def load() -> None:
        for module in AFTER_READY:
            importlib.import_module(module)

    # The loop takes the interpreter lock back from the importing thread within 1 ms rather than
    # the default 5, so a /health request or a poll in the meantime is not held up.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, 0.001))
    try:
        await asyncio.to_thread(load)
    finally:
        sys.setswitchinterval(interval)
    from bot.runtime.assemble import build_runtime  # lazy: 27 ms, 1200 KiB

    return build_runtime(home, config, reach=reach)


def _services(runtime: Runtime, access: AccessStore, notifier: Notifier) -> list[_Service]:
    from bot.runtime.cut_off import CutOffReplies  # lazy: 37 ms, 2120 KiB (5 imports)
    from bot.runtime.heartbeat import HeartbeatService
    from bot.runtime.pairing_watch import PairingWatch
    from bot.runtime.scheduler import SchedulerService
    from bot.runtime.signer_watch import SignerWatch

    config = runtime.config
    return [
        PairingWatch(access, notifier, config.bot.pairing.owners),
        SchedulerService(runtime, notifier, config.bot.cron),
        HeartbeatService(runtime, notifier, config.bot.heartbeat),
        SignerWatch(runtime, notifier),
        CutOffReplies(runtime, notifier),
    ]


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread (tests)
            pass
